#!/usr/bin/env bash
# Assembles a Node base image from this machine's own node, npm, /bin/sh and their libraries, laid out as
# distroless Node is (node at /nodejs/bin/node, user nonroot 65532), and imports it into podman: for
# building the Dockerfile where no image can be pulled. Usage: local-base.sh [image-name]
set -euo pipefail
name="${1:-localhost/sluice-local-base:node20}"
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT

node_bin="$(readlink -f "$(command -v node)")"
npm_dir="$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")"
mkdir -p "$root"/{nodejs/bin,bin,usr/local/bin,usr/local/lib/node_modules,etc,tmp,root,home/nonroot}
chmod 1777 "$root/tmp"
cp "$node_bin" "$root/nodejs/bin/node"
ln -s /nodejs/bin/node "$root/usr/local/bin/node"
cp "$(readlink -f /bin/sh)" "$root/bin/sh"
cp -r "$npm_dir" "$root/usr/local/lib/node_modules/npm"
printf '#!/bin/sh\nexec /nodejs/bin/node /usr/local/lib/node_modules/npm/bin/npm-cli.js "$@"\n' >"$root/usr/local/bin/npm"
chmod +x "$root/usr/local/bin/npm"
# Every shared library node and sh load, at the same path.
for lib in $( (ldd "$node_bin"; ldd /bin/sh) | grep -o '/[^ ]*' | sort -u); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
# The machine's trust store, so npm in the build stage reaches the registry as this machine does.
[ -d /etc/ssl/certs ] && mkdir -p "$root/etc/ssl" && cp -rL /etc/ssl/certs "$root/etc/ssl/certs"
printf 'root:x:0:0:root:/root:/bin/sh\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$root/etc/group"
chown 65532:65532 "$root/home/nonroot"
tar -C "$root" -c . | podman import --change 'ENV PATH=/usr/local/bin:/nodejs/bin:/usr/bin:/bin' \
  --change "ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt" - "$name" >/dev/null
echo "$name"
