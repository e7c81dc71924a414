@echo off
rem vfpctrl stand-in for the Wine suite: prints the file FAKE_VFP_COUNTERS names, whatever the arguments.
type "%FAKE_VFP_COUNTERS%"
