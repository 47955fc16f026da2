--- Attention: when an agent starts waiting for the user (its proposal reaches review) while
--- the user is elsewhere (Neovim is not focused, or the agent's own pane is not visible),
--- Cairn says so in ways terminals and tmux carry: a bell, a desktop-notification escape
--- (OSC 9 or OSC 777; through tmux's passthrough inside tmux), `tmux display-message`.
--- The `attention` option lists the ways (`false`: none); each applies where it can.
local M = {}

--- The ways there are, and what each does.
M.WAYS = { bell = true, osc9 = true, osc777 = true, tmux = true }

--- FocusLost came (and no FocusGained since): the terminal says Neovim is not focused.
M.focus_lost = false

--- Pane ids (tmux) of agents whose terminal Cairn opened (`:CairnWrap`), by agent id.
---@type table<string, string>
M.panes = {}

local function in_tmux()
  return vim.env.TMUX ~= nil and vim.env.TMUX ~= '' and vim.env.TMUX_PANE ~= nil and vim.fn.executable('tmux') == 1
end

--- Bytes to the terminal Neovim runs in.
local function to_terminal(bytes)
  if vim.api.nvim_ui_send then
    pcall(vim.api.nvim_ui_send, bytes)
  else
    pcall(vim.api.nvim_chan_send, 2, bytes)
  end
end

--- An escape sequence for the terminal outside tmux: wrapped for tmux's passthrough (it
--- passes it on where `allow-passthrough` is on, and drops it silently elsewhere).
local function through_tmux(seq)
  if not in_tmux() then
    return seq
  end
  return '\027Ptmux;' .. seq:gsub('\027', '\027\027') .. '\027\\'
end

--- Tells the user `text` (ids and marks only: nothing an agent wrote) each way in `ways`.
---@param ways string[]
---@param text string
function M.tell(ways, text)
  text = text:gsub('[%z\1-\31\127]', ' ')
  for _, way in ipairs(ways) do
    if way == 'bell' then
      to_terminal('\007')
    elseif way == 'osc9' then
      to_terminal(through_tmux('\027]9;' .. text .. '\007'))
    elseif way == 'osc777' then
      to_terminal(through_tmux('\027]777;notify;cairn;' .. text .. '\007'))
    elseif way == 'tmux' and in_tmux() then
      -- tmux expands formats in the message: `#` doubled is shown as itself.
      vim.system({ 'tmux', 'display-message', '-t', vim.env.TMUX_PANE, '-d', '5000', (text:gsub('#', '##')) })
    end
  end
end

--- Asks tmux about `pane`: `cb(visible, active)` (`nil` when tmux does not know it). Visible:
--- its window is its session's current one, a client is attached, and no other pane of the
--- window is zoomed over it; active: and it is its window's active pane.
local function pane_state(pane, cb)
  local fmt = '#{window_active} #{session_attached} #{pane_active} #{window_zoomed_flag}'
  local ok = pcall(vim.system, { 'tmux', 'display-message', '-p', '-t', pane, fmt }, { text = true }, function(r)
    local w, s, p, z = (r.stdout or ''):match('^(%d+) (%d+) (%d+) (%d+)')
    vim.schedule(function()
      if r.code ~= 0 or not w then
        cb(nil, nil)
      else
        local visible = w == '1' and tonumber(s) > 0 and (z == '0' or p == '1')
        cb(visible, visible and p == '1')
      end
    end)
  end)
  if not ok then
    cb(nil, nil)
  end
end

--- `cb(elsewhere)`: is the user away from Neovim (the terminal said it lost focus; in tmux,
--- Neovim's pane is not the active one of a window on screen), or is agent `id`'s own pane
--- (one `:CairnWrap` opened) not on screen?
function M.user_elsewhere(id, cb)
  if M.focus_lost then
    return cb(true)
  end
  if not in_tmux() then
    return cb(false)
  end
  pane_state(vim.env.TMUX_PANE, function(_, active)
    if active == false then
      return cb(true)
    end
    local pane = M.panes[id]
    if not pane then
      return cb(false)
    end
    pane_state(pane, function(visible)
      cb(visible == false)
    end)
  end)
end

--- The ways the `attention` option asks for (none when it is false or Neovim has no UI).
function M.ways()
  local ways = require('cairn.config').values.attention
  if type(ways) ~= 'table' or #vim.api.nvim_list_uis() == 0 then
    return {}
  end
  return ways
end

--- What was decided for each agent that started waiting, oldest first (`{id, told}`; the last
--- 50): what `:messages` would not show.
---@type {id: string, told: boolean}[]
M.decided = {}

local function decide(id, told)
  table.insert(M.decided, { id = id, told = told })
  if #M.decided > 50 then
    table.remove(M.decided, 1)
  end
end

--- Agent `id` (mark `mark`) started waiting for the user: tell them, if they are elsewhere.
---@param id string
---@param mark string?
function M.waiting(id, mark)
  local ways = M.ways()
  if #ways == 0 then
    return decide(id, false)
  end
  M.user_elsewhere(id, function(elsewhere)
    if elsewhere then
      local who = (type(mark) == 'string' and mark ~= '') and (mark .. ' ' .. id) or id
      M.tell(ways, 'cairn: agent ' .. who .. ' waits for your review')
    end
    decide(id, elsewhere)
  end)
end

--- Follows the terminal's focus (tmux passes it on with `focus-events on`).
function M.install()
  local group = vim.api.nvim_create_augroup('cairn_attention', {})
  vim.api.nvim_create_autocmd('FocusLost', { group = group, callback = function() M.focus_lost = true end, desc = 'cairn: Neovim is not focused' })
  vim.api.nvim_create_autocmd('FocusGained', { group = group, callback = function() M.focus_lost = false end, desc = 'cairn: Neovim is focused' })
end

return M
