#!/usr/bin/env bash
# What `make test` needs from the machine besides Python, in one list. `make test` checks it
# before its first step, so a missing tool stops the run at once with the command that
# installs it, never halfway through; .ci/run installs it.
#
#   bash hack/prereqs.sh check [GROUP...]    say what is missing (every group by default);
#                                            exit 1 if anything is
#   bash hack/prereqs.sh install [GROUP...]  install what is missing from Debian's packages
#                                            (as root), then check
#
# The groups, and what needs them:
#   web      Node.js 20+ and npm: the web UI (make web, make webtest)
#   go       Go (the newest `go` directive in hack/*/go.mod): the control plane, helm and
#            CoreDNS are built from pinned modules
#   tests    tmux (the TUI in a real terminal), zsh (its completion) and Chromium (tests/browser/)
#   cluster  root, containerd, runc, the CNI plugins, buildah, debootstrap, iptables:
#            tests/cluster/ runs the chart's pods on a real local node (make cluster-test)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ALL_GROUPS=(web go tests cluster)
NODE_MAJOR=20

# group|command|Debian package|what needs it
TOOLS=(
  "web|npm|npm|the web UI's dependencies (npm ci)"
  "any|make|make|make itself"
  "tests|tmux|tmux|the TUI in a real terminal (tests/integration/test_tui_terminal.py)"
  "tests|zsh|zsh|the zsh completion script's test (tests/unit/cli/test_completion.py)"
  "tests|chromium|chromium|the web UI's browser tests (tests/browser/)"
  "cluster|containerd|containerd|the local node's container runtime (tests/cluster/)"
  "cluster|ctr|containerd|loading the image into the node's containerd (tests/cluster/)"
  "cluster|runc|runc|the node's pods (tests/cluster/)"
  "cluster|buildah|buildah|building the image without Docker (hack/image/build.sh)"
  "cluster|debootstrap|debootstrap|the image's Python base (hack/image/base.sh)"
  "cluster|iptables|iptables|the node's Services and network (tests/cluster/)"
)

missing=()   # "what|why" lines for the report
packages=()  # Debian packages that would install what is missing
manual=()    # what no Debian package of this machine installs

lack() {  # lack <what> <why> [<Debian package>]
  missing+=("$1|$2")
  if [[ -n "${3:-}" ]]; then
    [[ " ${packages[*]-} " == *" $3 "* ]] || packages+=("$3")
  else
    manual+=("$1")
  fi
}

wanted() {  # wanted <group>: is the group asked for?
  [[ " ${groups[*]} " == *" $1 "* ]]
}

go_wanted() {  # the newest go directive of the pinned modules
  awk '/^go / {print $2}' "$here"/*/go.mod | sort -V | tail -1
}

check() {
  missing=() packages=() manual=()
  local line group tool package why
  for line in "${TOOLS[@]}"; do
    IFS='|' read -r group tool package why <<<"$line"
    [[ $group == any ]] || wanted "$group" || continue
    command -v "$tool" >/dev/null || lack "$tool" "$why" "$package"
  done
  if wanted web; then
    local node_version
    node_version="$(node --version 2>/dev/null || true)"
    node_version="${node_version#v}"
    if [[ -z "$node_version" || "${node_version%%.*}" -lt "$NODE_MAJOR" ]]; then
      lack "Node.js ${NODE_MAJOR}+" \
        "the web UI (vite); this machine has ${node_version:-none}, Debian bookworm's is 18"
    fi
  fi
  if wanted go; then
    local need have
    need="$(go_wanted)"
    have="$(go env GOVERSION 2>/dev/null || true)"
    have="${have#go}"
    if [[ -z "$have" || "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" != "$need" ]]; then
      lack "Go ${need}+" \
        "the control plane, helm and CoreDNS (hack/*/go.mod); this machine has ${have:-none}"
    fi
  fi
  if wanted cluster; then
    [[ -x /usr/lib/cni/bridge || -x /opt/cni/bin/bridge ]] ||
      lack "the CNI plugins" "the node's pod network (tests/cluster/)" containernetworking-plugins
  fi
}

report() {
  if (( ${#missing[@]} == 0 )) && { ! wanted cluster || (( EUID == 0 )); }; then
    return 0
  fi
  echo "make test needs what this machine lacks:" >&2
  local line
  for line in "${missing[@]}"; do
    printf '  %-28s %s\n' "${line%%|*}" "${line#*|}" >&2
  done
  if wanted cluster && (( EUID != 0 )); then
    printf '  %-28s %s\n' "root" "tests/cluster/ starts containerd and a kubelet" >&2
  fi
  if (( ${#packages[@]} )); then
    echo "Install them with (as root): bash hack/prereqs.sh install" >&2
  fi
  if (( ${#manual[@]} )); then
    local joined
    joined="$(printf '%s, ' "${manual[@]}")"
    echo "No Debian package of this release is recent enough for ${joined%, }:" \
      "install it from its own project's releases and put it on PATH." >&2
  fi
  if wanted cluster && (( EUID != 0 )); then
    echo "Run make test as root, or without tests/cluster/:" \
      "make lint typecheck imports webtest pytest" >&2
  fi
  return 1
}

mode="${1:-check}"
shift || true
groups=("$@")
(( ${#groups[@]} )) || groups=("${ALL_GROUPS[@]}")
for group in "${groups[@]}"; do
  [[ " ${ALL_GROUPS[*]} " == *" $group "* ]] || {
    echo "unknown group $group (groups: ${ALL_GROUPS[*]})" >&2
    exit 2
  }
done

case "$mode" in
  check)
    check
    report
    ;;
  install)
    check
    if (( ${#packages[@]} )); then
      (( EUID == 0 )) || { echo "installing ${packages[*]} needs root" >&2; exit 1; }
      echo "installing from Debian's packages: ${packages[*]}" >&2
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}"
    fi
    check
    report
    ;;
  *)
    echo "usage: bash hack/prereqs.sh check|install [${ALL_GROUPS[*]}]" >&2
    exit 2
    ;;
esac
