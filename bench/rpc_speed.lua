-- wrk script of bench/rpc-speed.sh: POSTs JSON-RPC request bodies, one per line of the file
-- named after `--` (wrk -t N -s bench/rpc_speed.lua URL -- FILE N), cycling through them. Each wrk
-- thread starts at its own offset in the list (thread i of n at i*len/n), so the threads do
-- not send the same request at the same time. Every request is formatted once, in init.
-- A response whose body has no "result" member (a JSON-RPC error answer, which comes with
-- HTTP 200) is counted; done() prints one line, `RPCSPEED {json}`: wrk's own counts (requests,
-- duration, bytes, socket errors, non-2xx) with the JSON-RPC error count, the first error
-- body seen, latency percentiles (microseconds) and the requests/s of the connections
-- over their own spans (see done()).
local ffi = require("ffi")
ffi.cdef [[
    typedef struct { long tv_sec; long tv_nsec; } rpc_speed_timespec;
    int clock_gettime(int clock, rpc_speed_timespec *ts);
]]
local ts = ffi.new("rpc_speed_timespec")
local function now_us()
    ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
    return tonumber(ts.tv_sec) * 1000000 + tonumber(ts.tv_nsec) / 1000
end

local threads = {}
local nthreads = 0

function setup(thread)
    thread:set("id", nthreads)
    nthreads = nthreads + 1
    table.insert(threads, thread)
end

function init(args)
    local file = args[1] or error("rpc_speed.lua: no request file (wrk ... -- FILE)")
    local path = wrk.path
    if path == nil or path == "" then path = "/" end
    local headers = { ["Content-Type"] = "application/json" }
    reqs = {}
    for line in io.lines(file) do
        if #line > 0 then
            reqs[#reqs + 1] = wrk.format("POST", path, headers, line)
        end
    end
    if #reqs == 0 then error("rpc_speed.lua: " .. file .. " holds no request") end
    -- `id`: set by setup() (in the main state) just before this thread's init; the thread
    -- count comes as the second argument (wrk runs setup and init thread by thread).
    local n = tonumber(args[2]) or 1
    idx = math.floor(id * #reqs / n) % #reqs
    errors = 0
    sample = ""
    done_n = 0
    t_first = 0
    t_last = 0
    -- wrk calls request() once on thread 0's state right after its init, before any
    -- connection, to check the request parses (script_verify_request); that call must not
    -- start the thread's span.
    verify_call = (id == 0)
end

function request()
    if verify_call then
        verify_call = false
    elseif t_first == 0 then
        t_first = now_us()
    end
    idx = idx + 1
    if idx > #reqs then idx = 1 end
    return reqs[idx]
end

function response(status, headers, body)
    done_n = done_n + 1
    t_last = now_us()
    -- "result" comes right after "jsonrpc" and "id" in both servers' answers: a short scan.
    if status == 200 and body and string.find(body, '"result"', 1, true) then
        return
    end
    errors = errors + 1
    if sample == "" then
        sample = tostring(status) .. " " .. string.sub(body or "", 1, 300)
    end
end

local function json_string(s)
    s = string.gsub(s, '[%c"\\]', function(c)
        if c == '"' then return '\\"' end
        if c == "\\" then return "\\\\" end
        return string.format("\\u%04x", string.byte(c))
    end)
    return '"' .. s .. '"'
end

function done(summary, latency, requests)
    local rpc_errors = 0
    local first = ""
    -- Each thread has one connection (-t C -c C), a closed loop: its requests/s is what it
    -- completed over the time from its first request to its last answer, which leaves out
    -- the request in flight when the duration ends (wrk's count drops it; for a method of
    -- seconds a request, that is most of a point).
    local span_rps = 0
    local min_done = -1
    for _, t in ipairs(threads) do
        local n = tonumber(t:get("done_n")) or 0
        local t0 = tonumber(t:get("t_first")) or 0
        local t1 = tonumber(t:get("t_last")) or 0
        if n > 0 and t1 > t0 then span_rps = span_rps + n / ((t1 - t0) / 1e6) end
        if min_done < 0 or n < min_done then min_done = n end
        rpc_errors = rpc_errors + (tonumber(t:get("errors")) or 0)
        local s = t:get("sample")
        if first == "" and s and s ~= "" then first = s end
    end
    local e = summary.errors
    io.write(string.format(
        'RPCSPEED {"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,' ..
        '"status":%d,"timeout":%d,"rpc_errors":%d,"first_error":%s,"lat_mean_us":%.1f,' ..
        '"lat_p50_us":%d,"lat_p90_us":%d,"lat_p99_us":%d,"lat_max_us":%d,"span_rps":%.3f,' ..
        '"min_per_conn":%d}\n',
        summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status,
        e.timeout, rpc_errors, json_string(first), latency.mean, latency:percentile(50),
        latency:percentile(90), latency:percentile(99), latency.max, span_rps, min_done))
end
