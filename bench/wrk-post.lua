-- wrk script for bench/run.mjs: POSTs JSON bodies that each carry a distinct id
-- (so wakes never coalesce) with the bearer token, counts what it sent, and at the
-- end prints one JSON line that bench/wrk.mjs reads.
--
--   wrk ... -s bench/wrk-post.lua <url> -- <token> <tag> <body part> <body part> ...
--
-- The body is its parts joined by the request's id: "<part1><id><part2><id>...".
-- The id is "<tag>-<thread>-<counter>" at a fixed width, so every body has the same size.

local threads = {}
local next_thread = 0

function setup(thread)
  next_thread = next_thread + 1
  thread:set("thread_number", next_thread)
  table.insert(threads, thread)
end

local headers = {}
local parts = {}
local tag = ""
sent = 0

function init(args)
  headers["content-type"] = "application/json"
  headers["authorization"] = "Bearer " .. args[1]
  tag = args[2]
  for i = 3, #args do
    parts[#parts + 1] = args[i]
  end
end

function request()
  sent = sent + 1
  local id = string.format("%s-%02d-%09d", tag, thread_number, sent)
  local body = table.concat(parts, id)
  return wrk.format("POST", nil, headers, body)
end

function done(summary, latency, requests)
  local total_sent = 0
  for _, thread in ipairs(threads) do
    total_sent = total_sent + thread:get("sent")
  end
  local e = summary.errors
  io.write(string.format(
    'WRK_RESULT {"requests":%d,"durationUs":%d,"sent":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latencyUs":{"p50":%d,"p99":%d,"mean":%.1f,"max":%d}}\n',
    summary.requests, summary.duration, total_sent,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.mean, latency.max))
end
