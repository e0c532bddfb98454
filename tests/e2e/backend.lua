-- A test backend served by HAProxy itself: reads the whole request body
-- (as a vLLM server would) and answers with the name of its frontend, in
-- the body and in X-Served-By. A request header X-Delay-Ms holds the
-- answer that long, to keep requests in flight.
core.register_service("served_by", "http", function(applet)
    applet:receive()
    local delay = tonumber(applet.headers["x-delay-ms"] and applet.headers["x-delay-ms"][0] or "0")
    if delay and delay > 0 then
        core.msleep(math.min(delay, 30000))
    end
    local name = applet.f:fe_name():gsub("^test_", "")
    local body = '{"served_by":"' .. name .. '"}'
    applet:set_status(200)
    applet:add_header("content-type", "application/json")
    applet:add_header("content-length", string.len(body))
    applet:add_header("x-served-by", name)
    applet:start_response()
    applet:send(body)
end)
