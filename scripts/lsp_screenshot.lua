-- Neovim (0.7+) with template-engine lsp, for docs/images/lsp-nvim.png (scripts/lsp_screenshot.py runs it
-- in tmux): opens departments/research/defaults.yaml, adds a toleration the system policy forbids, waits
-- for the diagnostics, then hovers on cost-center's value.  Environment: ORG, PYTHON.
local root = os.getenv("ORG")
local analysed = 0
vim.o.termguicolors = false
vim.o.number = true
vim.o.signcolumn = "yes"
vim.cmd("syntax on")
vim.cmd("highlight NormalFloat ctermbg=236 ctermfg=252")
vim.cmd("highlight FloatBorder ctermbg=236 ctermfg=110")
vim.lsp.handlers["textDocument/hover"] = vim.lsp.with(vim.lsp.handlers.hover, { border = "rounded", max_width = 110 })
vim.diagnostic.config({ virtual_text = { prefix = "●" } })
vim.cmd("edit " .. vim.fn.fnameescape(root .. "/departments/research/defaults.yaml"))
local buf = vim.api.nvim_get_current_buf()
local id = vim.lsp.start_client({
  name = "template-engine",
  cmd = { os.getenv("PYTHON"), "-m", "template_engine", "lsp" },
  root_dir = root,
  handlers = {
    ["$/templateEngine/analysed"] = function() analysed = analysed + 1 end,
  },
})
vim.lsp.buf_attach_client(buf, id)

local function after(count, step)
  local timer = vim.loop.new_timer()
  timer:start(50, 50, vim.schedule_wrap(function()
    if analysed >= count then
      timer:stop()
      step()
    end
  end))
end

after(1, function()
  local last = vim.api.nvim_buf_line_count(buf)
  vim.api.nvim_buf_set_lines(buf, last, last, false, {
    "  tolerations:",
    "  - name: gpu-maintenance",
    "    key: maintenance",
    "    operator: Exists",
    "    effect: NoExecute",
  })
  after(2, function()
    vim.api.nvim_win_set_cursor(0, { 6, 6 })
    vim.lsp.buf.hover()
  end)
end)
