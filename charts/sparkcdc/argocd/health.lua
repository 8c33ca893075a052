-- Argo CD health check for sparkcdc.io/CdcPipeline (resource.customizations.health.sparkcdc.io_CdcPipeline).
-- Written for Lua 5.1 (Argo CD's gopher-lua) and tested with Lua 5.1 and 5.4: see docs/argocd.md.
--
--   no status yet, or status.observedGeneration / a condition's observedGeneration behind
--   metadata.generation (the operator has not acted on the latest spec)   -> Progressing
--   phase Failed, Stalled=True, CrashLooping=True, or Ready=False for a
--   reason that needs a person (image, secret, repeated failures, ...)     -> Degraded
--   spec.suspend and phase Suspended, driver stopped                       -> Suspended
--   phase Snapshotting or Streaming with Ready=True, or Completed          -> Healthy
--   anything else (driver starting, restarting after a backoff, ...)       -> Progressing

local DEGRADED_REASONS = {
  DriverFailed = true,          -- the driver pod failed; the operator restarts it after a backoff
  MaxRestartsExceeded = true,   -- restartPolicy.maxRestarts reached: phase Failed
  ImagePullFailed = true,       -- spec.spark.image cannot be pulled
  SecretMissing = true,         -- a *SecretRef names a Secret or key that does not exist
  ContainerConfigError = true,  -- the driver container cannot be configured
  NoProgress = true,            -- running, but nothing moved for the stall period
  InvalidSpec = true,           -- the spec passed the CRD schema but not the operator's checks
}

local function find_condition(status, kind)
  if status.conditions == nil then
    return nil
  end
  for _, c in ipairs(status.conditions) do
    if c.type == kind then
      return c
    end
  end
  return nil
end

local function is_true(c)
  return c ~= nil and c.status == "True"
end

local function describe(c, fallback)
  if c == nil then
    return fallback
  end
  local text = c.reason or ""
  if c.message ~= nil and c.message ~= "" then
    if text ~= "" then
      text = text .. ": "
    end
    text = text .. c.message
  end
  if text == "" then
    return fallback
  end
  return text
end

local function progress_summary(status, phase)
  local p = status.progress
  if p == nil then
    return phase
  end
  if phase == "Snapshotting" and p.splitsTotal ~= nil and p.splitsTotal > 0 then
    return string.format("Snapshotting: %d/%d splits", p.splitsFinished or 0, p.splitsTotal)
  end
  if phase == "Streaming" then
    local text = "Streaming"
    if p.lagSeconds ~= nil then
      text = text .. string.format(", lag %.1fs", p.lagSeconds)
    end
    if p.binlogOffset ~= nil then
      text = text .. ", binlog " .. p.binlogOffset
    end
    return text
  end
  return phase
end

local function health()
  local hs = { status = "Progressing", message = "Waiting for the sparkcdc operator to report status" }
  local status = obj.status
  if status == nil then
    return hs
  end
  local generation = nil
  if obj.metadata ~= nil then
    generation = obj.metadata.generation
  end
  if generation ~= nil then
    if status.observedGeneration == nil or status.observedGeneration < generation then
      hs.message = string.format("Waiting for the operator to act on generation %d", generation)
      return hs
    end
    if status.conditions ~= nil then
      for _, c in ipairs(status.conditions) do
        if c.observedGeneration ~= nil and c.observedGeneration < generation then
          hs.message = string.format("Condition %s reflects generation %d, not %d",
            c.type or "?", c.observedGeneration, generation)
          return hs
        end
      end
    end
  end

  local phase = status.phase
  local ready = find_condition(status, "Ready")
  local stalled = find_condition(status, "Stalled")
  local crash = find_condition(status, "CrashLooping")
  local reconciling = find_condition(status, "Reconciling")
  local suspend = obj.spec ~= nil and obj.spec.suspend == true

  if phase == "Failed" then
    return { status = "Degraded", message = describe(ready, describe(stalled, "The pipeline failed")) }
  end
  if suspend then
    if phase == "Suspended" and not is_true(reconciling) then
      return { status = "Suspended", message = "Suspended (spec.suspend); the checkpoint is kept" }
    end
    return { status = "Progressing", message = describe(reconciling, "Suspending: stopping the driver") }
  end
  if is_true(stalled) then
    return { status = "Degraded", message = describe(stalled, "Stalled") }
  end
  if is_true(crash) then
    return { status = "Degraded", message = describe(crash, "The driver keeps failing") }
  end
  if ready ~= nil and ready.status == "False" and DEGRADED_REASONS[ready.reason or ""] then
    return { status = "Degraded", message = describe(ready, "Not ready") }
  end
  if is_true(ready) and (phase == "Snapshotting" or phase == "Streaming") then
    return { status = "Healthy", message = progress_summary(status, phase) }
  end
  if phase == "Completed" then
    return { status = "Healthy", message = describe(ready, "Completed") }
  end
  if phase == "Suspended" then
    return { status = "Progressing", message = "Resuming: spec.suspend was cleared" }
  end
  return { status = "Progressing", message = describe(reconciling, describe(ready, "Starting")) }
end

return health()
