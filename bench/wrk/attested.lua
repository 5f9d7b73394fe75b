-- Anonymous token requests that each carry an attestation of their own, for wrk: the request
-- (request.lua) with `X-Tessera-Attestation` set to the next line of BENCH_ATTESTATIONS_FILE (one
-- thread: the lines in order from BENCH_ATTESTATIONS_FROM (1 by default), then again from the
-- first, which the service refuses as replays).
-- At the end it prints one line: "BENCH_RESULT <json>" with the requests, the duration and the
-- statuses other than 200.

package.path = (os.getenv("BENCH_WRK_DIR") or ".") .. "/?.lua;" .. package.path

local attestations = {}
local next_one = 1
local method, path, headers, body

function init(args)
  for line in io.lines(os.getenv("BENCH_ATTESTATIONS_FILE")) do
    if line ~= "" then table.insert(attestations, line) end
  end
  next_one = tonumber(os.getenv("BENCH_ATTESTATIONS_FROM") or "1")
  method = os.getenv("BENCH_METHOD")
  path = os.getenv("BENCH_PATH")
  body = os.getenv("BENCH_BODY")
  headers = {
    ["Content-Type"] = os.getenv("BENCH_CONTENT_TYPE"),
    ["Authorization"] = os.getenv("BENCH_AUTHORIZATION"),
  }
end

function request()
  headers["X-Tessera-Attestation"] = attestations[next_one]
  next_one = next_one % #attestations + 1
  return wrk.format(method, path, headers, body)
end

function done(summary, latency, requests)
  io.write(string.format('BENCH_RESULT {"requests":%d,"durationUs":%d,"statusErrors":%d}\n',
    summary.requests, summary.duration, summary.errors.status))
end
