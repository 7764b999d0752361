-- wrk script of bench/v2_iris.py: POST one V2 iris request, report the run as one JSON line.
-- The body can be overridden with the environment variable V2_IRIS_BODY.

wrk.method = "POST"
wrk.body = os.getenv("V2_IRIS_BODY")
  or '{"inputs":[{"name":"input-0","shape":[1,4],"datatype":"FP32","data":[[5.1,3.5,1.4,0.2]]}]}'
wrk.headers["Content-Type"] = "application/json"

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
