-- dbucket: hand a request's priority class on to vLLM's `priority` field.
--
-- vLLM started with --scheduling-policy priority schedules its waiting
-- requests by the body's `priority` (lower first). No HAProxy action of
-- 2.6 to 3.x rewrites a request body, so this Lua filter does: it puts
-- `"priority":N,` right after the body's opening brace, N being the
-- class `http-request set-priority-class` gave the request (0 critical,
-- 1 standard, 2 sheddable in haproxy/haproxy.cfg).
--
-- Always exactly INSERT_LEN bytes, whatever the body: haproxy.cfg raises
-- Content-Length by that much before the body is forwarded, because a
-- Lua filter cannot set a header once the payload flows (2.6 raises an
-- error from HTTPMessage's header methods there). A body that is not a
-- JSON object gets as many spaces in front instead, which JSON ignores:
-- vLLM answers it with its own 400, as it would have. A class outside
-- 0-9 is sent as 1 (standard) to keep the length.
--
-- Placed first, the field loses to a `priority` the client sent itself:
-- Python's JSON keeps the last of duplicate keys. Lua filters are marked
-- experimental in HAProxy's Lua API; checked on 2.6 and 3.0 (tests/e2e/
-- vllm-priority.bats).

local INSERT_LEN = 13 -- #'"priority":N,'
local PEEK = 64       -- how far to look for the opening brace

local Priority = {}
Priority.id = "dbucket priority"
Priority.flags = filter.FLT_CFG_FL_HTX
Priority.__index = Priority

function Priority:new()
	return setmetatable({ done = false }, Priority)
end

function Priority:start_analyze(txn, chn)
	if not chn:is_resp() then
		filter.register_data_filter(self, chn)
	end
end

local function class_of(txn)
	local c = tonumber(txn.f:prio_class())
	if c == nil or c < 0 or c > 9 or c ~= math.floor(c) then
		return 1
	end
	return c
end

-- What to insert where: after the brace (a comma when a member follows,
-- a space when the object is empty), else spaces in front.
local function plan(head, class)
	local brace = head:find("^%s*{")
	if brace == nil then
		return string.rep(" ", INSERT_LEN), 0
	end
	local at = head:find("{", 1, true)
	local field = '"priority":' .. class
	if head:find("^%s*}", at + 1) then
		return field .. " ", at
	end
	return field .. ",", at
end

-- Returns what to forward: nil all of it, 0 nothing yet (HAProxy calls
-- again as more arrives), filter.ERROR to fail the request rather than
-- send vLLM a body its Content-Length no longer describes.
function Priority:http_payload(txn, msg)
	if self.done then
		return
	end
	local n = msg:input()
	if n == 0 then
		return 0
	end
	local head = msg:body(0, math.min(n, PEEK))
	-- Wait for a byte past the brace (or the whole body) to know whether
	-- the object is empty; whitespace alone tells nothing yet.
	if not msg:eom() and n < PEEK and head:find("^%s*{?%s*$") then
		return 0
	end
	local text, at = plan(head, class_of(txn))
	if msg:insert(text, at) ~= INSERT_LEN then
		return filter.ERROR
	end
	self.done = true
end

core.register_filter("dbucket_priority", Priority, function(f)
	return f
end)
