-- wrk script of bench/repository_multiplex.py: each request goes to one of MODELS models
-- (m00, m01, ...) of a model repository: uniformly, or with HOT_SHARE of the requests on the first
-- HOT models. Reports the run as one JSON line, as bench/v2_iris.lua does.

local models = tonumber(os.getenv("MODELS") or "50")
local hot = tonumber(os.getenv("HOT") or "0")
local hot_share = tonumber(os.getenv("HOT_SHARE") or "0")
local body = os.getenv("BODY")
local headers = { ["Content-Type"] = "application/json" }

local function pick()
  if hot > 0 and math.random() < hot_share then
    return math.random(0, hot - 1)
  end
  return math.random(0, models - 1)
end

request = function()
  return wrk.format("POST", string.format("/v2/models/m%02d/infer", pick()), headers, body)
end

init = function(args)
  math.randomseed(os.time() * 1000 + math.floor(os.clock() * 1e6))
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'SPREAD_RESULT {"duration_us":%d,"requests":%d,"errors":%d,"non_2xx":%d,'
      .. '"p50_us":%d,"p99_us":%d,"max_us":%d}\n',
    summary.duration, summary.requests, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(99), latency.max
  ))
end
