#!/bin/sh
# Rebuild three-bundle.min.js (a development-time step; the bundle is committed and shipped
# as package data, so users never need npm). Run from anywhere with node and npm:
#   sh elements/drawing/_static/build_three.sh
set -eu
THREE_VERSION=0.187.0
ESBUILD_VERSION=0.28.2
REVISION=$(echo "$THREE_VERSION" | cut -d. -f2)
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
npm init -y >/dev/null
npm install --no-audit --no-fund "three@$THREE_VERSION" "esbuild@$ESBUILD_VERSION" >/dev/null
cp "$HERE/three-entry.js" entry.js
./node_modules/.bin/esbuild entry.js --bundle --format=iife --global-name=THREE --minify \
  --legal-comments=inline --target=es2018 \
  --banner:js="/* three.js r$REVISION (npm three@$THREE_VERSION, MIT License, see THREE_LICENSE) with its OrbitControls add-on, bundled by esbuild $ESBUILD_VERSION from elements/drawing/_static/three-entry.js into one classic script that defines the global THREE. See elements/drawing/_static/README.md. */" \
  --outfile="$HERE/three-bundle.min.js"
cp node_modules/three/LICENSE "$HERE/THREE_LICENSE"
echo "wrote $HERE/three-bundle.min.js"
