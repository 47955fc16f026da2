--- `:CairnWrap {cmd}`: runs an agent CLI under `cairn wrap` (its writes become a proposal) in a
--- tmux split, or a terminal buffer outside tmux (beside Neovim when both get 80 columns, else
--- below it), and selects its proposal as soon as it exists, so its ghost text grows while the
--- agent works.
local rpc = require('cairn.rpc')
local notify = require('cairn.notify')

local M = {}

--- Ids of the wrap agents the host knows.
local function wrap_ids(agents)
  local ids = {}
  for _, a in ipairs(agents or {}) do
    if a.provider == 'wrap' then
      ids[a.id] = a
    end
  end
  return ids
end

--- Starts `cmd` (a shell command line) under `cairn wrap`; `on_done(id)` once its proposal
--- is selected.
function M.start(cmd, on_done)
  rpc.call('list', nil, function(before)
    local known = wrap_ids(before.agents)
    rpc.call('wrap_argv', nil, function(r)
      local argv = vim.list_extend(vim.deepcopy(r.argv), { '--task', cmd, '--', 'sh', '-c', cmd })
      -- Side by side only when both get 80 columns; else stacked, the agent below.
      local wide = vim.o.columns >= 2 * 80
      local pane = {}
      if vim.env.TMUX and vim.fn.executable('tmux') == 1 then
        -- The pane stays until a key once the agent ends: its last answer, or why it did not
        -- start ("not found"), stays readable.
        local hold = { 'sh', '-c', '"$@"; code=$?; printf "\n[cairn: the agent ended (exit %s); press Enter to close]" "$code"; read _', 'sh' }
        -- tmux expands `-c` as a format: `#` is doubled (a directory `p#(cmd)` runs nothing).
        local dir = vim.fn.getcwd():gsub('#', '##')
        local split = { 'tmux', 'split-window', wide and '-h' or '-v', '-P', '-F', '#{pane_id}', '-c', dir }
        vim.system(vim.list_extend(vim.list_extend(split, hold), argv), { text = true }, function(res)
          pane.id = (res.stdout or ''):match('%%%d+')
        end)
      else
        vim.cmd(wide and 'botright vnew' or 'botright new')
        if vim.fn.has('nvim-0.11') == 1 then
          vim.fn.jobstart(argv, { term = true })
        else
          vim.fn.termopen(argv)
        end
      end
      M.pane = pane
      M.select_new(known, 100, on_done)
    end)
  end)
end

--- Selects the first wrap agent not in `known`, looking again every 100 ms (`tries` times).
function M.select_new(known, tries, on_done)
  rpc.call('list', nil, function(now)
    for id, _ in pairs(wrap_ids(now.agents)) do
      if not known[id] then
        -- Its pane, for telling you when it waits for review and that pane is not on screen.
        if M.pane and M.pane.id then
          require('cairn.attention').panes[id] = M.pane.id
        end
        require('cairn').select(id, function()
          notify.notify('wrap ' .. id .. ': its writes show as ghost text as it works')
          if on_done then on_done(id) end
        end)
        return
      end
    end
    if tries > 0 then
      vim.defer_fn(function() M.select_new(known, tries - 1, on_done) end, 100)
    else
      notify.notify('the wrap session did not start (see its pane)', vim.log.levels.WARN)
    end
  end)
end

return M
