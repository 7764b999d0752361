-- wrk script of the V2 benchmarks (bench/v2_iris.py, the peer benches, bench/cnn_batching.py): POST
-- one V2 request, report the run as one JSON line.
-- The JSON body can be overridden with V2_IRIS_BODY. A binary-tensor body (the V2 binary tensor data
-- extension) is read from the file V2_IRIS_BODY_FILE, whose JSON header is V2_IRIS_HEADER_LENGTH bytes.

wrk.method = "POST"
local body_file = os.getenv("V2_IRIS_BODY_FILE")
if body_file then
  local file = assert(io.open(body_file, "rb"), "cannot open V2_IRIS_BODY_FILE " .. body_file)
  wrk.body = file:read("*a")
  file:close()
  wrk.headers["Content-Type"] = "application/octet-stream"
  wrk.headers["Inference-Header-Content-Length"] =
    assert(os.getenv("V2_IRIS_HEADER_LENGTH"), "V2_IRIS_HEADER_LENGTH is needed with V2_IRIS_BODY_FILE")
else
  wrk.body = os.getenv("V2_IRIS_BODY")
    or '{"inputs":[{"name":"input-0","shape":[1,4],"datatype":"FP32","data":[[5.1,3.5,1.4,0.2]]}]}'
  wrk.headers["Content-Type"] = "application/json"
end

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
