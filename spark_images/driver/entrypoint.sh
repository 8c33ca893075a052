#!/bin/bash
# The entry point of sparkcdc's driver/executor image, modelled on the one of Apache Spark's own images
# (apache/spark-docker entrypoint.sh): Spark on Kubernetes starts every executor pod with the args
# `executor` and passes its settings in SPARK_* variables, so this script must turn them into the same
# java command line Spark's image runs. The operator's driver pods set their own command
# (`sparkcdc driver`), which bypasses this script; any other command runs as given (pass-through).
set -eo pipefail

# Spark's executor JVM looks the user up (Hadoop's UserGroupInformation). The image has a passwd entry
# for uid 185; a pod run as another uid gets a fake one from nss_wrapper, as in Spark's image.
attempt_setup_fake_passwd_entry() {
  local myuid mygid wrapper
  myuid="$(id -u)"
  if ! getent passwd "$myuid" &>/dev/null; then
    for wrapper in {/usr,}/lib{/*,}/libnss_wrapper.so; do
      if [ -s "$wrapper" ]; then
        NSS_WRAPPER_PASSWD="$(mktemp)"
        NSS_WRAPPER_GROUP="$(mktemp)"
        export LD_PRELOAD="$wrapper" NSS_WRAPPER_PASSWD NSS_WRAPPER_GROUP
        mygid="$(id -g)"
        printf 'spark:x:%s:%s:%s:%s:/bin/false\n' "$myuid" "$mygid" "${SPARK_USER_NAME:-anonymous uid}" \
          "$SPARK_HOME" >"$NSS_WRAPPER_PASSWD"
        printf 'spark:x:%s:\n' "$mygid" >"$NSS_WRAPPER_GROUP"
        break
      fi
    done
  fi
}

if [ -z "$JAVA_HOME" ]; then
  JAVA_HOME=$(java -XshowSettings:properties -version 2>&1 >/dev/null | grep 'java.home' | awk '{print $3}')
fi

SPARK_CLASSPATH="$SPARK_CLASSPATH:${SPARK_HOME}/jars/*"
# The driver passes the executor's JVM options as SPARK_JAVA_OPT_0, SPARK_JAVA_OPT_1, ...; their order
# matters (a later -D wins), so sort by the index, not by name.
SPARK_EXECUTOR_JAVA_OPTS=()
while IFS= read -r opt; do
  [ -n "$opt" ] && SPARK_EXECUTOR_JAVA_OPTS+=("$opt")
done < <(env | grep '^SPARK_JAVA_OPT_' | sort -t_ -k4 -n | sed 's/[^=]*=\(.*\)/\1/g' || true)

if [ -n "$SPARK_EXTRA_CLASSPATH" ]; then
  SPARK_CLASSPATH="$SPARK_CLASSPATH:$SPARK_EXTRA_CLASSPATH"
fi
if [ -n "${PYSPARK_PYTHON+x}" ]; then
  export PYSPARK_PYTHON
fi
if [ -n "${PYSPARK_DRIVER_PYTHON+x}" ]; then
  export PYSPARK_DRIVER_PYTHON
fi
if [ -n "${HADOOP_CONF_DIR+x}" ]; then
  SPARK_CLASSPATH="$HADOOP_CONF_DIR:$SPARK_CLASSPATH"
fi
if [ -n "${SPARK_CONF_DIR+x}" ]; then
  SPARK_CLASSPATH="$SPARK_CONF_DIR:$SPARK_CLASSPATH"
elif [ -n "${SPARK_HOME+x}" ]; then
  SPARK_CLASSPATH="$SPARK_HOME/conf:$SPARK_CLASSPATH"
fi
# SPARK-43540: files the driver ships (spark.files) land in the working directory.
SPARK_CLASSPATH="$SPARK_CLASSPATH:$PWD"

case "$1" in
  driver)
    shift 1
    CMD=(
      "$SPARK_HOME/bin/spark-submit"
      --conf "spark.driver.bindAddress=$SPARK_DRIVER_BIND_ADDRESS"
      --conf "spark.executorEnv.SPARK_DRIVER_POD_IP=$SPARK_DRIVER_BIND_ADDRESS"
      --deploy-mode client
      "$@"
    )
    ;;
  executor)
    shift 1
    CMD=(
      "${JAVA_HOME}/bin/java"
      "${SPARK_EXECUTOR_JAVA_OPTS[@]}"
      -Xms"$SPARK_EXECUTOR_MEMORY"
      -Xmx"$SPARK_EXECUTOR_MEMORY"
      -cp "$SPARK_CLASSPATH:$SPARK_DIST_CLASSPATH"
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend
      --driver-url "$SPARK_DRIVER_URL"
      --executor-id "$SPARK_EXECUTOR_ID"
      --cores "$SPARK_EXECUTOR_CORES"
      --app-id "$SPARK_APPLICATION_ID"
      --hostname "$SPARK_EXECUTOR_POD_IP"
      --resourceProfileId "$SPARK_RESOURCE_PROFILE_ID"
      --podName "$SPARK_EXECUTOR_POD_NAME"
    )
    ;;
  *)
    # Not a Spark-on-Kubernetes mode: run the given command (e.g. `sparkcdc --help`).
    exec "$@"
    ;;
esac

attempt_setup_fake_passwd_entry
# tini as PID 1 reaps the Python workers an executor forks and forwards SIGTERM to the JVM.
exec /usr/bin/tini -s -- "${CMD[@]}"
