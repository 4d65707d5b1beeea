# Build the Windows one-folder app (dist\gpudesk\: gpudesk-gui.exe, gpudesk.exe,
# _internal\) and, when Inno Setup 6.3+ is installed, dist\gpudesk-<version>-setup.exe.
#   powershell -ExecutionPolicy Bypass -File packaging\build_windows.ps1
# $env:VENV picks the virtual environment (default .venv).
$ErrorActionPreference = "Stop"
Set-Location (Join-Path $PSScriptRoot "..")
$venv = if ($env:VENV) { $env:VENV } else { ".venv" }
$py = Join-Path $venv "Scripts\python.exe"
if (-not (Test-Path $py)) {
    py -3.11 -m venv $venv
    & $py -m pip install --quiet -e .
    if ($LASTEXITCODE -ne 0) { throw "pip install -e . failed" }
}

& $py -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('PyInstaller') is None)"
if ($LASTEXITCODE -ne 0) {
    & $py -m pip install --quiet --disable-pip-version-check "pyinstaller>=6.10"
    if ($LASTEXITCODE -ne 0) { throw "cannot install PyInstaller" }
}

$watch = [Diagnostics.Stopwatch]::StartNew()
& $py -m PyInstaller --noconfirm --distpath dist --workpath build\pyinstaller packaging\gpudesk.spec
if ($LASTEXITCODE -ne 0) { throw "PyInstaller failed" }
$mb = (Get-ChildItem dist\gpudesk -Recurse -File | Measure-Object Length -Sum).Sum / 1MB
"built dist\gpudesk in {0:N0} s: {1:N1} MB" -f $watch.Elapsed.TotalSeconds, $mb

$iscc = Get-Command iscc.exe -ErrorAction SilentlyContinue
$isccPath = if ($iscc) { $iscc.Source } else { "${env:ProgramFiles(x86)}\Inno Setup 6\ISCC.exe" }
if (-not (Test-Path $isccPath)) {
    "Inno Setup not found: skipping the installer (https://jrsoftware.org/isinfo.php)"
    exit 0
}
$version = (& $py -c "import gpudesk; print(gpudesk.__version__)").Trim()
& $isccPath "/DAppVersion=$version" packaging\gpudesk.iss
if ($LASTEXITCODE -ne 0) { throw "ISCC failed" }
"installer: dist\gpudesk-$version-setup.exe"
