{{/* Names ------------------------------------------------------------------------------------- */}}

{{- define "sparkcdc.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The operator's objects: "<release>-sparkcdc", or the release name when it contains the chart name. */}}
{{- define "sparkcdc.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "sparkcdc.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "sparkcdc.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "sparkcdc.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "sparkcdc.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s:%s@%s" .Values.image.repository $tag .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/* Labels ------------------------------------------------------------------------------------ */}}

{{- define "sparkcdc.labels" -}}
helm.sh/chart: {{ include "sparkcdc.chart" . }}
app.kubernetes.io/name: {{ include "sparkcdc.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: sparkcdc
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Selector of the operator pod; never changes across upgrades (Deployment selectors are immutable). */}}
{{- define "sparkcdc.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sparkcdc.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{- define "sparkcdc.operatorLabels" -}}
{{ include "sparkcdc.labels" . }}
app.kubernetes.io/component: operator
{{- end }}

{{- define "sparkcdc.driverLabels" -}}
{{ include "sparkcdc.labels" . }}
app.kubernetes.io/component: driver
{{- end }}

{{/* Namespaces ---------------------------------------------------------------------------------- */}}

{{/* Namespaces getting the driver ServiceAccount and Role, as a JSON list. */}}
{{- define "sparkcdc.driverNamespaces" -}}
{{- if .Values.watchNamespaces }}
{{- .Values.watchNamespaces | uniq | toJson }}
{{- else if .Values.driver.namespaces }}
{{- .Values.driver.namespaces | uniq | toJson }}
{{- else }}
{{- list .Release.Namespace | toJson }}
{{- end }}
{{- end }}

{{/* Checks that need more than one value (the single values are checked by values.schema.json). */}}
{{- define "sparkcdc.validate" -}}
{{- if and .Values.watchNamespaces .Values.driver.namespaces }}
{{- fail "driver.namespaces must be empty when watchNamespaces is set: the driver ServiceAccount goes into each watched namespace" }}
{{- end }}
{{- if and .Values.metrics.enabled (eq (int .Values.metrics.port) (int .Values.health.port)) }}
{{- fail (printf "metrics.port and health.port must differ (both are %v)" .Values.metrics.port) }}
{{- end }}
{{- if and .Values.serviceMonitor.enabled (not .Values.metrics.enabled) }}
{{- fail "serviceMonitor.enabled needs metrics.enabled: true (there is nothing to scrape)" }}
{{- end }}
{{- if and .Values.podMonitor.enabled (not (int .Values.driver.metricsPort)) }}
{{- fail "podMonitor.enabled needs driver.metricsPort (the drivers serve no metrics with 0)" }}
{{- end }}
{{- if and (int .Values.driver.metricsPort) (has (int .Values.driver.metricsPort) (list 7078 7079)) }}
{{- fail (printf "driver.metricsPort %v is taken by Spark in the driver pod (7078 driver RPC, 7079 block manager)" .Values.driver.metricsPort) }}
{{- end }}
{{- end }}

{{/* The operator's rules on its namespaced resources (a ClusterRole's or each watched namespace's
Role): what it watches and reports, then what it creates (operatorWriteRules). */}}
{{- define "sparkcdc.operatorRules" -}}
{{ include "sparkcdc.operatorWatchRules" . }}
{{ include "sparkcdc.operatorWriteRules" . }}
{{- end }}

{{/* Watching and reporting: bound cluster-wide when the operator watches all namespaces. None of
it creates a pod or reads a Secret, so none of it reaches beyond the pipelines. */}}
{{- define "sparkcdc.operatorWatchRules" -}}
# The pipelines: kopf watches them and patches its annotations (diff base, handler progress) and,
# for statePolicy Retain, its finalizer; the reconciler reads them and lists them to assign server ids.
- apiGroups: ["sparkcdc.io"]
  resources: ["cdcpipelines"]
  verbs: ["get", "list", "watch", "patch"]
# Phase, conditions, driver epoch (fencing) and the server-id range; the checkpoint copy of a
# retained pipeline is restored through it too.
- apiGroups: ["sparkcdc.io"]
  resources: ["cdcpipelines/status"]
  verbs: ["get", "patch"]
# Pods and Services carry an ownerReference with blockOwnerDeletion to their pipeline: clusters with
# the OwnerReferencesPermissionEnforcement admission plugin require this.
- apiGroups: ["sparkcdc.io"]
  resources: ["cdcpipelines/finalizers"]
  verbs: ["update"]
# Driver pods: kopf watches them by label.
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch"]
# Events on pipelines (the operator's and kopf's), also on a pipeline refused where drivers may not run.
- apiGroups: ["", "events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end }}

{{/* Creating: bound only in the namespaces where drivers may run (a Role there, or a RoleBinding
there to the "-drivers" ClusterRole), never cluster-wide: pod creation anywhere would be close to
cluster-admin (any account, any Secret mounted). */}}
{{- define "sparkcdc.operatorWriteRules" -}}
# Driver pods and their headless Services.
- apiGroups: [""]
  resources: ["pods", "services"]
  verbs: ["create", "delete", "get", "list", "watch", "patch"]
# statePolicy Retain keeps a checkpoint in "<name>-sparkcdc-state"; large checkpoints spill into
# ConfigMaps the operator reads when it retains or restores one.
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["create", "delete", "get", "list", "watch", "patch", "update"]
# Each pipeline's Spark authentication key (spark_pods.py), mounted by its driver and executor pods.
# Create only: the operator never reads, lists or watches a Secret.
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["create"]
{{- end }}

{{/* The driver's rules in its own namespace. */}}
{{- define "sparkcdc.driverRules" -}}
# Its own pipeline: the spec, and the checkpoint and progress in the status (fenced writes).
- apiGroups: ["sparkcdc.io"]
  resources: ["cdcpipelines"]
  verbs: ["get"]
- apiGroups: ["sparkcdc.io"]
  resources: ["cdcpipelines/status"]
  verbs: ["get", "patch"]
# An Event when a verification (spec.verifyNonce) ends.
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create"]
# Checkpoint spill (large checkpoints) and Spark's executor ConfigMaps.
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["create", "delete", "deletecollection", "get", "list", "watch"]
# Spark on Kubernetes (client mode): executor pods, their Services and volumes.
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["create", "delete", "deletecollection", "get", "list", "watch", "patch"]
- apiGroups: [""]
  resources: ["services", "persistentvolumeclaims"]
  verbs: ["create", "delete", "deletecollection", "get", "list", "watch"]
{{- end }}
