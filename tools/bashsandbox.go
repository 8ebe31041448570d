package tools

import (
	"encoding/json"
	"path/filepath"
	"slices"

	"decode/tools/sandbox"
)

// Access is how far one command line may reach inside the sandbox.
type Access int

// The accesses, from the narrowest.
const (
	// AccessRead: the workspace is read-only; only the command's temp dir
	// and the toolchain caches are writable (a command the gate let run
	// because it looks read-only).
	AccessRead Access = iota
	// AccessWrite: the workspace is writable too (edit mode, a command an
	// allow rule covers, or one a person approved).
	AccessWrite
	// AccessFull: no file or network confinement; the protected paths stay
	// read-only and other processes stay out of sight (bypass mode, an
	// approved escalation).
	AccessFull
)

func (a Access) String() string {
	switch a {
	case AccessRead:
		return "workspace read-only"
	case AccessWrite:
		return "workspace writable"
	}
	return "unconfined"
}

// BashSandbox runs the bash tool's commands in the operating system's
// sandbox (package tools/sandbox).
type BashSandbox struct {
	// Layers are the layers to apply (a sandbox.Probe's).
	Layers []sandbox.Layer
	// Roots are the workspace roots: always readable, writable when the
	// call's access allows.
	Roots []string
	// Read are more readable paths: the system, toolchains, sandbox.read.
	Read []string
	// Write are always writable: the command's temp dir, toolchain caches
	// and a linked worktree's git directories.
	Write []string
	// Protected stay read-only in every mode: .git/hooks, .git/config,
	// .decode, decode's refs.
	Protected []string
	// Pinned cannot be renamed or replaced (a repository's .git).
	Pinned []string
	// TempDir is the commands' private temp dir (TMPDIR).
	TempDir string
	// Net keeps the host's network (sandbox.allow_net = true).
	Net bool
	// Proxy is the Unix socket of decode's network proxy for the hosts
	// --allow-net names; empty, a command reaches only its own loopback.
	Proxy string
	// Access says how far a command line may reach; nil means AccessWrite.
	// The gate answers it (Gate.BashAccess).
	Access func(args json.RawMessage) Access
	// Helper is the helper binary (os.Executable() when empty).
	Helper string
}

// spec builds the sandbox specification of one call.
func (s *BashSandbox) spec(args []string, dir string, env []string, acc Access) sandbox.Spec {
	spec := sandbox.Spec{
		Args: args, Dir: dir, Env: env, Layers: s.Layers, Helper: s.Helper,
		Read:      append(slices.Clone(s.Roots), s.Read...),
		Write:     slices.Clone(s.Write),
		Protected: s.Protected, Pinned: s.Pinned, Net: s.Net, ProxySocket: s.Proxy,
	}
	if s.TempDir != "" {
		spec.Env = append(slices.Clone(env), "TMPDIR="+s.TempDir)
		spec.Write = append(spec.Write, s.TempDir)
	}
	switch acc {
	case AccessWrite:
		spec.Write = append(spec.Write, s.Roots...)
	case AccessFull:
		spec.Unconfined, spec.Net = true, true
	}
	return spec
}

// readOnlyPrograms are commands that change nothing by themselves: in
// default mode with the sandbox active they run without asking, and the
// sandbox holds the workspace read-only for them, so a wrong guess cannot
// change anything.
var readOnlyPrograms = map[string]bool{
	"echo": true, "printf": true, "true": true, "false": true, "test": true, "[": true,
	"ls": true, "cat": true, "head": true, "tail": true, "wc": true, "grep": true, "egrep": true, "fgrep": true,
	"rg": true, "find": true, "pwd": true, "stat": true, "file": true, "tree": true, "which": true,
	"sort": true, "uniq": true, "cut": true, "tr": true, "diff": true, "cmp": true, "du": true, "df": true,
	"basename": true, "dirname": true, "realpath": true, "readlink": true, "date": true, "env": true,
	"printenv": true, "id": true, "whoami": true, "uname": true, "nl": true, "od": true, "xxd": true,
	"md5sum": true, "sha1sum": true, "sha256sum": true, "jq": true, "column": true, "comm": true,
	"awk": true, "sed": true, "gofmt": true, "command": true, "type": true, "strings": true,
	"less": true, "more": true, "tac": true, "rev": true, "fold": true, "fmt": true, "paste": true,
	"join": true, "expand": true, "seq": true, "yes": true, "sleep": true, "tput": true, "locale": true,
}

// readOnlyVersion are programs that only print something with these
// arguments: python3 --version, node -v, go version.
var readOnlyVersion = map[string]bool{"--version": true, "-v": true, "-V": true, "version": true}

// readOnlyGit are git subcommands that only read.
var readOnlyGit = map[string]bool{
	"status": true, "log": true, "diff": true, "show": true, "rev-parse": true, "ls-files": true,
	"grep": true, "blame": true, "shortlog": true, "describe": true, "cat-file": true, "ls-tree": true,
	"branch": true, "remote": true, "tag": true, "stash": true, "config": true, "for-each-ref": true,
	"show-ref": true, "reflog": true, "merge-base": true, "rev-list": true, "name-rev": true, "whatchanged": true,
}

// readOnlyGo are go subcommands that write only the build cache.
var readOnlyGo = map[string]bool{"version": true, "env": true, "list": true, "doc": true, "vet": true}

// looksReadOnly reports whether a command's words name a read-only program.
func looksReadOnly(words []shellWord) bool {
	if len(words) == 0 || !words[0].literal {
		return false
	}
	name := filepath.Base(words[0].text)
	if name == "git" {
		for _, w := range words[1:] {
			if !w.literal {
				return false
			}
			if len(w.text) > 0 && w.text[0] == '-' {
				return false // git -c, -C and friends change what runs
			}
			return readOnlyGit[w.text]
		}
		return false
	}
	if name == "go" && len(words) > 1 && words[1].literal {
		return readOnlyGo[words[1].text]
	}
	if len(words) == 2 && words[1].literal && readOnlyVersion[words[1].text] {
		return true
	}
	return readOnlyPrograms[name]
}
