-- The wallet population for wrk (bench/wallets.ts drives it; bench/README.md "A hundred thousand
-- wallets").
--
--   wrk -t T -c C -d 60s -s bench/wrk/wallets.lua URL -- FILE RATE MODE T
--
-- FILE: one wallet a line, `path<TAB>etag` (the ETag it holds; empty: none, a plain GET). Wallet i
-- belongs to thread i mod T; a thread's connections take its wallets in turn. RATE: polls a
-- second over all threads, on a schedule: each thread hands out send times RATE / T a second
-- apart, and a connection waits for the next one before its next poll (wrk's delay(), whole
-- milliseconds: sends bunch within a millisecond). A server slower than the schedule leaves its
-- connections busy and is offered less: the rate got is in the report. 0 = as fast as answered.
-- MODE, comma-separated (or `-`): `reconnect` (Connection: close: every poll on a new connection,
-- a browser whose 5 s keep-alive meets a 5 s poll), `xff` (each wallet its own X-Forwarded-For,
-- for --client-ip-header), `nocond` (no If-None-Match: plain GETs, what a cache answers 200s to),
-- `fetch` (Cache-Control: no-cache and Pragma: no-cache beside If-None-Match, as fetch() sends).
--
-- Lean on purpose: every request is built once, at init, and no response() callback is defined
-- (with one, wrk hands every answer's headers to Lua as a table): wrk's own CPU per poll is then a
-- few µs, where the first version of this script (a thread per connection, Lua response
-- handling) spent 57 µs — more than the server it measured. The price: a wallet does not pick up
-- the ETag of a 200 (a page that changed during the run costs a full answer at each poll until the
-- run ends: bench/wallets.ts seeds the ETags at the run's start height and counts the 200s);
-- statuses come from the server's metrics, latency from wrk's own histogram (from when each poll
-- was sent).
--
-- Prints one JSON line: requests, seconds, socket errors, non-2xx/3xx answers, latency
-- percentiles in ms.

local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
int clock_gettime(int clk_id, bench_timespec *tp);
]]
local ts = ffi.new("bench_timespec")
local function now_ms()
  ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) * 1000 + tonumber(ts.tv_nsec) / 1e6
end

local requests = {}
local at = 0
-- the thread's schedule: the next send time handed out, and the time between two
local due = 0
local interval = 0

function init(args)
  local file, mode = args[1], args[3] or "-"
  local rate = tonumber(args[2] or "0")
  local threads = tonumber(args[4] or "1")
  if rate > 0 then interval = threads * 1000 / rate end
  local reconnect = mode:find("reconnect") ~= nil
  local xff = mode:find("xff") ~= nil
  local nocond = mode:find("nocond") ~= nil
  local nocache = mode:find("fetch") ~= nil
  local i = 0
  for line in io.lines(file) do
    local p, e = line:match("^([^\t]*)\t?(.*)$")
    if p and p ~= "" then
      if i % threads == thread_id then
        local h = { ["Accept-Encoding"] = "gzip, deflate, br" }
        if e ~= "" and not nocond then
          h["If-None-Match"] = e
          if nocache then
            h["Cache-Control"] = "no-cache"
            h["Pragma"] = "no-cache"
          end
        end
        if reconnect then h["Connection"] = "close" end
        if xff then
          h["X-Forwarded-For"] = string.format("10.%d.%d.%d", math.floor(i / 65536) % 256, math.floor(i / 256) % 256, i % 256)
        end
        requests[#requests + 1] = wrk.format("GET", p, h)
      end
      i = i + 1
    end
  end
  -- threads start at different places of their lists
  at = #requests > 0 and (thread_id * 7919) % #requests or 0
end

function delay()
  if interval == 0 then return 0 end
  local now = now_ms()
  -- a schedule fallen behind by more than a second starts again from now (no burst to catch up)
  if due < now - 1000 then due = now end
  local slot = due
  due = due + interval
  if slot <= now then return 0 end
  return math.floor(slot - now)
end

function request()
  at = at + 1
  if at > #requests then at = 1 end
  return requests[at]
end

-- thread ids, set before each thread's init
local next_id = 0
function setup(thread)
  thread:set("thread_id", next_id)
  next_id = next_id + 1
end

function done(summary, latency, requests_)
  local e = summary.errors
  local ms = function(us) return us / 1000 end
  io.write(string.format(
    '{"requests":%d,"seconds":%.3f,"errors":{"connect":%d,"read":%d,"write":%d,"timeout":%d,"status":%d},' ..
    '"p50":%.3f,"p90":%.3f,"p99":%.3f,"p999":%.3f,"max":%.3f}\n',
    summary.requests, summary.duration / 1e6, e.connect, e.read, e.write, e.timeout, e.status,
    ms(latency:percentile(50)), ms(latency:percentile(90)), ms(latency:percentile(99)), ms(latency:percentile(99.9)), ms(latency.max)))
end
