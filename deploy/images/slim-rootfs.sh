#!/usr/bin/env bash
# slim-rootfs.sh DIR MIRROR SUITE: turns a debootstrap minbase root file
# system into what Debian's "-slim" images are: no documentation, man pages
# or translations (now or in packages installed later), no apt caches or
# package lists, dpkg without fsync, and apt sources for the suite, its
# updates and security.
set -euo pipefail
dir=$1 mirror=$2 suite=$3
cat >"$dir/etc/apt/sources.list" <<SRC
deb $mirror $suite main
deb $mirror $suite-updates main
deb http://deb.debian.org/debian-security $suite-security main
SRC
cat >"$dir/etc/dpkg/dpkg.cfg.d/slim" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/lintian/*
CFG
# As in Docker's Debian images: no fsync per unpacked file (a container's
# layer is committed as a whole or not at all).
echo force-unsafe-io >"$dir/etc/dpkg/dpkg.cfg.d/docker-apt-speedup"
cat >"$dir/etc/apt/apt.conf.d/docker-clean" <<'CFG'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
CFG
cat >"$dir/etc/apt/apt.conf.d/docker-no-recommends" <<'CFG'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
CFG
find "$dir/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "$dir/usr/share/doc" -mindepth 1 -type d -empty -delete
rm -rf "$dir"/usr/share/man/* "$dir"/usr/share/info/* "$dir"/usr/share/lintian/*
find "$dir/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/cache/apt/*.bin "$dir"/var/lib/apt/lists/* \
  "$dir"/var/log/*.log "$dir"/var/log/apt/* "$dir"/tmp/* "$dir"/var/tmp/*
: >"$dir/etc/machine-id"
