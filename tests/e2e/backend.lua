-- A test backend served by HAProxy itself: reads the whole request body
-- (as a vLLM server would) and answers with the name of its frontend, in
-- the body and in X-Served-By.
core.register_service("served_by", "http", function(applet)
    applet:receive()
    local name = applet.f:fe_name():gsub("^test_", "")
    local body = '{"served_by":"' .. name .. '"}'
    applet:set_status(200)
    applet:add_header("content-type", "application/json")
    applet:add_header("content-length", string.len(body))
    applet:add_header("x-served-by", name)
    applet:start_response()
    applet:send(body)
end)
