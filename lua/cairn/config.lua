--- Options of cairn.nvim: a schema with types, defaults and descriptions, validated by
--- `require('cairn').setup(opts)`, or taken from `vim.g.cairn` (a table of the same keys, set
--- before the plugin loads: no setup() call needed). The same descriptions are in doc/cairn.txt.
local M = {}

---@class cairn.Keymaps
---@field accept string|false
---@field reject string|false
---@field preview string|false

---@class cairn.Config
---@field binary string? Path of the cairn binary; default: `cairn` on PATH, else the plugin's target/release/cairn.
---@field project_root string? Project root; default: nearest ancestor of the cwd with .agentfs/, else the cwd.
---@field cairn_home string? Cairn's home (config.toml, logs, signals); default: $CAIRN_HOME, else the platform data directory.
---@field ghost_text boolean Show the selected agent's changes as ghost text.
---@field auto_reload boolean Reload unmodified buffers after accept and undo.
---@field keymaps cairn.Keymaps|false Default mappings; false for none.
---@field attention string[]|false How to tell you an agent waits for review while you are elsewhere: 'bell', 'osc9', 'osc777', 'tmux'; false for never.

M.schema = {
  binary = { type = 'string', optional = true, desc = 'path of the cairn binary' },
  project_root = { type = 'string', optional = true, desc = 'project root' },
  cairn_home = { type = 'string', optional = true, desc = "Cairn's home (config.toml, logs, signals)" },
  ghost_text = { type = 'boolean', default = true, desc = 'show ghost text' },
  auto_reload = { type = 'boolean', default = true, desc = 'reload unmodified buffers after accept' },
  keymaps = {
    type = 'table',
    allow_false = true,
    default = { accept = '<leader>a', reject = '<leader>r', preview = '<leader>p' },
    keys = { accept = true, reject = true, preview = true },
    desc = 'default mappings',
  },
  attention = {
    type = 'table',
    allow_false = true,
    default = { 'bell', 'tmux', 'osc9' },
    list_of = { bell = true, osc9 = true, osc777 = true, tmux = true },
    desc = 'how to tell you an agent waits for review while you are elsewhere',
  },
}

---@type cairn.Config
M.values = vim.deepcopy({
  ghost_text = true,
  auto_reload = true,
  keymaps = M.schema.keymaps.default,
  attention = M.schema.attention.default,
})

local function fail(msg)
  error('(cairn) ' .. msg, 0)
end

--- Validates `opts` against the schema and merges it over the defaults.
---@param opts table?
function M.setup(opts)
  opts = opts or {}
  if type(opts) ~= 'table' then
    fail('setup() expects a table, got ' .. type(opts))
  end
  for key, value in pairs(opts) do
    local spec = M.schema[key]
    if not spec then
      fail(string.format("unknown option '%s' (known: %s)", key, table.concat(vim.tbl_keys(M.schema), ', ')))
    end
    if not (value == false and spec.allow_false) and type(value) ~= spec.type then
      fail(string.format("option '%s' must be a %s, got %s", key, spec.type, type(value)))
    end
    if spec.list_of and type(value) == 'table' then
      for _, v in pairs(value) do
        if not spec.list_of[v] then
          fail(string.format("'%s' takes a list of %s, got %s", key, table.concat(vim.tbl_keys(spec.list_of), ', '), vim.inspect(v)))
        end
      end
    end
    if spec.keys and type(value) == 'table' then
      for k, v in pairs(value) do
        if not spec.keys[k] then
          fail(string.format("unknown key '%s.%s'", key, k))
        end
        if v ~= false and type(v) ~= 'string' then
          fail(string.format("'%s.%s' must be a string or false", key, k))
        end
      end
    end
  end
  for key in pairs(opts) do
    M.user_set[key] = true
  end
  M.values = vim.tbl_deep_extend('force', M.values, opts)
  if opts.keymaps == false then
    M.values.keymaps = false
  end
  -- A list replaces the default list (a deep merge would keep its other entries).
  if opts.attention ~= nil then
    M.values.attention = opts.attention
  end
  M.apply_keymaps()
end

--- Options given to setup(); config.toml's [ui] does not override these.
M.user_set = {}

--- Applies `[ui]` from config.toml (sent by the host) to every option setup() left alone.
---@param ui {ghost_text: boolean, auto_reload: boolean, keymaps: boolean}?
function M.apply_ui(ui)
  if type(ui) ~= 'table' then
    return
  end
  for _, key in ipairs({ 'ghost_text', 'auto_reload' }) do
    if not M.user_set[key] and type(ui[key]) == 'boolean' then
      M.values[key] = ui[key]
    end
  end
  if not M.user_set.keymaps and ui.keymaps == false then
    M.values.keymaps = false
    M.apply_keymaps()
  end
end

local applied = {}

--- Creates (or removes) the default mappings to the <Plug> mappings. A key the user (or
--- another plugin) already maps is left alone: the <Plug> mappings stay available for it.
function M.apply_keymaps()
  local function ours(lhs)
    local m = vim.fn.maparg(lhs, 'n', false, true)
    return type(m) == 'table' and tostring(m.rhs or ''):find('<Plug>(cairn-', 1, true) ~= nil
  end
  for _, lhs in pairs(applied) do
    -- Only what is still ours: a mapping the user made since is theirs to keep.
    if ours(lhs) then
      pcall(vim.keymap.del, 'n', lhs)
    end
  end
  applied = {}
  local maps = M.values.keymaps
  if not maps then
    return
  end
  for action, lhs in pairs(maps) do
    local existing = lhs and vim.fn.maparg(lhs, 'n', false, true) or {}
    local taken = type(existing) == 'table' and next(existing) ~= nil and not ours(lhs)
    if lhs and not taken then
      vim.keymap.set('n', lhs, '<Plug>(cairn-' .. action .. ')', { desc = 'cairn: ' .. action })
      applied[action] = lhs
    end
  end
end

--- Applies `vim.g.cairn` (the same keys as setup()) once, when this module first loads: a
--- plugin manager that only puts the plugin on 'runtimepath' (vim.pack, a plain `rtp+=`) needs
--- no setup() call. A later setup() overrides what it set. A wrong key is said, not raised:
--- the plugin still loads with the defaults.
function M.from_global()
  local g = vim.g.cairn
  if g == nil then
    return
  end
  if type(g) ~= 'table' then
    require('cairn.notify').error('vim.g.cairn must be a table of options (see :help cairn-setup), got ' .. type(g))
    return
  end
  local ok, err = pcall(M.setup, g)
  if not ok then
    require('cairn.notify').error('vim.g.cairn: ' .. tostring(err):gsub('^%(cairn%) ', ''))
  end
end

M.from_global()

return M
