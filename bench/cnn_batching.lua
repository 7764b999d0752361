-- wrk script of bench/cnn_batching.py: POST one V2 request with a binary tensor body (the V2 binary
-- tensor data extension), report the run as one JSON line, as bench/v2_iris.lua does.
-- CNN_BODY_FILE: the file holding the body (a JSON header, then the raw tensor bytes);
-- CNN_HEADER_LENGTH: the JSON header's length in bytes.

local path = os.getenv("CNN_BODY_FILE")
local file = assert(io.open(path, "rb"), "cannot open CNN_BODY_FILE " .. tostring(path))
wrk.method = "POST"
wrk.body = file:read("*a")
file:close()
wrk.headers["Content-Type"] = "application/octet-stream"
wrk.headers["Inference-Header-Content-Length"] = assert(os.getenv("CNN_HEADER_LENGTH"), "CNN_HEADER_LENGTH")

-- Called once after the run with the totals over all threads; latencies are in microseconds.
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'V2_IRIS_RESULT {"duration_us":%d,"requests":%d,"bytes":%d,'
      .. '"connect_errors":%d,"read_errors":%d,"write_errors":%d,"timeouts":%d,"non_2xx":%d,'
      .. '"p50_us":%d,"p90_us":%d,"p99_us":%d,"mean_us":%.1f,"max_us":%d}\n',
    summary.duration, summary.requests, summary.bytes,
    e.connect, e.read, e.write, e.timeout, e.status,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.mean, latency.max
  ))
end
