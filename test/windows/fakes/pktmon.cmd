@echo off
rem pktmon stand-in for the Wine suite: appends its arguments to FAKE_PKTMON_LOG; "start" writes a small
rem .etl where --file-name says, "etl2pcap <etl> --out <pcap>" copies the recorded capture FAKE_PKTMON_PCAP
rem there and prints pktmon-style counts; FAKE_PKTMON_FAIL=start makes "start" fail as a busy pktmon does.
echo %*>>"%FAKE_PKTMON_LOG%"
if /i "%1"=="start" goto start
if /i "%1"=="etl2pcap" goto etl2pcap
exit /b 0
:start
if /i "%FAKE_PKTMON_FAIL%"=="start" (echo Error: another capture session is running. & exit /b 183)
shift
:startarg
if "%~1"=="" exit /b 0
if /i "%~1"=="--file-name" (echo fake etl>"%~2" & exit /b 0)
shift
goto startarg
:etl2pcap
if not exist "%~2" (echo Error: %~2 not found & exit /b 2)
copy /y "%FAKE_PKTMON_PCAP%" "%~4" >nul
echo Processing...
echo Packets total:       3
echo Packet drop count:   1
echo Formatted file:      %~4
exit /b 0
