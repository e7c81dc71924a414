@echo off
rem vfpctrl stand-in for the Wine suite: /list-vmswitch-port prints the file FAKE_VFP_PORTS names (our own
rem JSON, no real sample), anything else the file FAKE_VFP_COUNTERS names, whatever the other arguments.
if /i "%~1"=="/list-vmswitch-port" (
  type "%FAKE_VFP_PORTS%"
  exit /b 0
)
type "%FAKE_VFP_COUNTERS%"
