-- init for the Neovim that runs inside tmux in tmux_spec.lua: the plugin, a plain UI.
vim.opt.rtp:prepend(vim.env.CAIRN_REPO)
vim.cmd.runtime('plugin/cairn.lua')
vim.o.swapfile = false
vim.o.signcolumn = 'yes:1'
vim.o.number = false
vim.o.ruler = true
vim.o.laststatus = 0
vim.o.shortmess = vim.o.shortmess .. 'AFI'
vim.cmd('highlight clear')
