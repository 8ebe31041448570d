package commands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/urfave/cli/v2"
)

// HookOptions are the inputs of decode hook.
type HookOptions struct {
	Out io.Writer
	// Dir is where the repository is looked for.
	Dir string
	// Action is install or uninstall.
	Action string
	// Name is the git hook: pre-commit, prepare-commit-msg, commit-msg, pre-push.
	Name string
	// Prompt replaces the hook's default prompt.
	Prompt string
	// Decode is the decode executable the hook runs (when it is gone, the
	// hook runs decode from PATH).
	Decode string
}

// hookMarker marks a hook script written by decode, so that uninstall
// removes only its own.
const hookMarker = "# decode-hook:"

// chainSuffix is added to the name of a hook decode found in place: the
// decode hook runs it first and fails when it fails.
const chainSuffix = ".pre-decode"

// gitHook is what decode knows about one git hook.
type gitHook struct {
	// verdict: decode answers {"ok": bool, "reason": string} and the hook
	// fails when ok is false. Otherwise (prepare-commit-msg) the answer is
	// a commit message.
	verdict bool
	prompt  string
}

var gitHooks = map[string]gitHook{
	"pre-commit": {verdict: true, prompt: "Review the staged change on stdin (git diff --cached). " +
		"Set ok to false only for a clear problem that must stop the commit: a secret or credential, " +
		"a merge conflict marker, a debugging leftover, or code that obviously cannot work; reason says what and where. " +
		"Otherwise ok is true and reason says in one line what the change does."},
	"commit-msg": {verdict: true, prompt: "Check the commit message against the staged change, both on stdin. " +
		"Set ok to false when the message does not describe the change or says nothing; reason says what to fix. " +
		"Otherwise ok is true and reason is empty."},
	"pre-push": {verdict: true, prompt: "Review the commits about to be pushed (git log -p on stdin). " +
		"Set ok to false only for a clear problem that must stop the push: a secret or credential, " +
		"a merge conflict marker, or a debugging leftover; reason says what and where. Otherwise ok is true."},
	"prepare-commit-msg": {prompt: "Write the git commit message for the staged change on stdin (git diff --cached): " +
		"a summary line of at most 72 characters in the imperative mood, then, if the change needs it, " +
		"a blank line and a short body saying why. Print only the message."},
}

func hookNames() string {
	var names []string
	for n := range gitHooks {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// NewCmdHook builds `decode hook`. runF replaces the run function in tests.
func NewCmdHook(f *Factory, runF func(context.Context, *HookOptions) error) *cli.Command {
	if runF == nil {
		runF = hookRun
	}
	return &cli.Command{
		Name:      "hook",
		Usage:     "install or uninstall a git hook that runs decode",
		ArgsUsage: "install|uninstall pre-commit|prepare-commit-msg|commit-msg|pre-push",
		Description: `Writes a git hook that calls decode ask -q with the staged change (or the
commits being pushed) on stdin, into the repository's hooks directory
(core.hooksPath when set). A hook already there is kept as NAME.pre-decode
and runs first; uninstall puts it back.

pre-commit, commit-msg and pre-push ask for {"ok": bool, "reason": string}
(--schema) and stop the commit or push when ok is false, printing the reason.
pre-push skips refs under refs/decode/ (sessions shared with git push), so
pushing only sessions asks no model.

prepare-commit-msg drafts the message of a new commit whose message is empty
(not with -m, -F, a template, a merge, a squash or --amend).

The hooks use DECODE_HOOK_MODEL when set, else decode's configured model;
DECODE_HOOK_SKIP=1 skips them once.

   decode hook install pre-commit --prompt "review the staged diff; fail on secrets"
   decode hook install prepare-commit-msg
   decode hook uninstall pre-commit`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "prompt", Usage: "what decode is asked, instead of the hook's default `TEXT`"},
			&cli.StringFlag{Name: "dir", Aliases: []string{"C"}, Usage: "the repository is at `DIR`"},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return usageErrorf("usage: decode hook install|uninstall NAME, with NAME one of %s", hookNames())
			}
			dir, err := f.workDir(c.String("dir"))
			if err != nil {
				return err
			}
			exe, _ := os.Executable()
			return runF(c.Context, &HookOptions{Out: f.IO.Out, Dir: dir, Action: c.Args().Get(0),
				Name: c.Args().Get(1), Prompt: c.String("prompt"), Decode: exe})
		},
	}
}

func hookRun(ctx context.Context, o *HookOptions) error {
	h, ok := gitHooks[o.Name]
	if !ok {
		return usageErrorf("decode has no %q hook; it has %s", o.Name, hookNames())
	}
	if o.Action != "install" && o.Action != "uninstall" {
		return usageErrorf("decode hook %s: use install or uninstall", o.Action)
	}
	dir, err := hooksDir(ctx, o.Dir)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, o.Name)
	if o.Action == "uninstall" {
		return uninstallHook(o.Out, path)
	}
	prompt := h.prompt
	if strings.TrimSpace(o.Prompt) != "" {
		prompt = o.Prompt
	}
	script, err := hookScript(o.Name, h.verdict, prompt, o.Decode)
	if err != nil {
		return err
	}
	return installHook(o.Out, path, script)
}

// hooksDir is where git looks for hooks: core.hooksPath when set, else the
// hooks directory of the common git dir (shared by linked worktrees).
func hooksDir(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", "rev-parse", "--git-path", "hooks")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", fmt.Errorf("git hooks need git, which is not on PATH")
		}
		return "", fmt.Errorf("find the hooks directory in %s: %s", dir, strings.TrimSpace(firstLineOf(stderr.String()+err.Error())))
	}
	p := strings.TrimSpace(string(out))
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		return "", fmt.Errorf("hooks directory: %w", err)
	}
	return p, nil
}

// installHook writes the hook, keeping a hook that is not decode's as
// NAME.pre-decode, which the new hook runs first.
func installHook(out io.Writer, path, script string) error {
	name := filepath.Base(path)
	chained := path + chainSuffix
	note := ""
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("read the existing hook: %w", err)
	case isDecodeHook(old):
		note = " (updated)"
	default:
		if _, err := os.Lstat(chained); err == nil {
			return fmt.Errorf("%s is not decode's and %s exists too; move one of them away first", path, chained)
		}
		if err := os.Rename(path, chained); err != nil {
			return fmt.Errorf("keep the existing hook: %w", err)
		}
		note = "; the hook that was there runs first, kept as " + name + chainSuffix
	}
	tmp := path + ".decode-tmp"
	if err := os.WriteFile(tmp, []byte(script), 0o755); err != nil {
		return fmt.Errorf("write the hook: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write the hook: %w", err)
	}
	fmt.Fprintf(out, "installed the %s hook: %s%s\n", name, path, note)
	return nil
}

// uninstallHook removes decode's hook and puts back the one it chained.
func uninstallHook(out io.Writer, path string) error {
	name := filepath.Base(path)
	old, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("there is no %s hook in %s", name, filepath.Dir(path))
	}
	if err != nil {
		return fmt.Errorf("read the hook: %w", err)
	}
	if !isDecodeHook(old) {
		return fmt.Errorf("%s was not installed by decode; it is left alone", path)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove the hook: %w", err)
	}
	chained := path + chainSuffix
	if _, err := os.Lstat(chained); err == nil {
		if err := os.Rename(chained, path); err != nil {
			return fmt.Errorf("put back %s: %w", chained, err)
		}
		fmt.Fprintf(out, "removed decode's %s hook; %s is back\n", name, path)
		return nil
	}
	fmt.Fprintf(out, "removed decode's %s hook: %s\n", name, path)
	return nil
}

func isDecodeHook(script []byte) bool {
	return bytes.Contains(script, []byte("\n"+hookMarker))
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// verdictSchema is the answer a checking hook asks for. decode prints it
// as compact JSON with sorted keys, so the hook tells ok from not ok by
// the prefix {"ok":true, with no JSON parser in the shell.
const verdictSchema = `{"type":"object","properties":{` +
	`"ok":{"type":"boolean","description":"true to let it go on, false to stop it"},` +
	`"reason":{"type":"string","description":"one line: what is wrong, or what the change does"}},` +
	`"required":["ok","reason"],"additionalProperties":false}`

// hookScript renders the hook's shell script.
func hookScript(name string, verdict bool, prompt, exe string) (string, error) {
	t, err := template.New("hook").Parse(hookTemplate)
	if err != nil {
		return "", fmt.Errorf("hook template: %w", err)
	}
	var b strings.Builder
	err = t.Execute(&b, map[string]any{
		"Name": name, "Marker": hookMarker, "Verdict": verdict, "Schema": verdictSchema,
		"Prompt": shellQuote(prompt), "Decode": shellQuote(exe), "Chained": name + chainSuffix,
	})
	if err != nil {
		return "", fmt.Errorf("hook template: %w", err)
	}
	return b.String(), nil
}

// hookTemplate is a POSIX sh script. Its input for decode: the staged diff
// (pre-commit, prepare-commit-msg), the message and the staged diff
// (commit-msg), or git log -p of the commits being pushed (pre-push).
const hookTemplate = `#!/bin/sh
{{.Marker}} {{.Name}}. Installed by: decode hook install {{.Name}}
# Removed (putting back the hook it chains, if any) by: decode hook uninstall {{.Name}}
# DECODE_HOOK_MODEL=provider:model chooses the model; DECODE_HOOK_SKIP=1 skips this hook.
{{- if eq .Name "pre-push"}}
refs=$(cat)
{{- end}}
chained="$(dirname "$0")/{{.Chained}}"
if [ -x "$chained" ]; then
	{{if eq .Name "pre-push"}}printf '%s\n' "$refs" | {{end}}"$chained" "$@" || exit $?
fi
[ -z "${DECODE_HOOK_SKIP:-}" ] || exit 0
decode=${DECODE:-{{.Decode}}}
command -v "$decode" >/dev/null 2>&1 || decode=decode
prompt={{.Prompt}}
{{- if eq .Name "pre-commit"}}
git diff --cached --quiet && exit 0
input() { git diff --cached; }
{{- else if eq .Name "commit-msg"}}
message=$(sed -e '/^# -\{24\} >8 -\{24\}$/,$d' -e '/^#/d' "$1")
input() {
	printf 'Commit message:\n%s\n\nStaged change (git diff --cached):\n' "$message"
	git diff --cached
}
{{- else if eq .Name "pre-push"}}
pushed=$(printf '%s\n' "$refs" | while read -r local_ref local_sha remote_ref remote_sha; do
	case $local_sha in *[!0]*) ;; *) continue ;; esac # a deletion: nothing to review
	case $local_ref in refs/decode/*) continue ;; esac # decode's own sessions: not code
	case $remote_sha in
	*[!0]*) git cat-file -e "$remote_sha^{commit}" 2>/dev/null && git log -p --reverse "$remote_sha..$local_sha" && continue ;;
	esac
	git log -p --reverse "$local_sha" --not --remotes
done)
[ -n "$pushed" ] || exit 0
input() { printf '%s\n' "$pushed"; }
{{- else if eq .Name "prepare-commit-msg"}}
# Only a new commit whose message is still empty: not -m or -F, a template,
# a merge, a squash or an amend (git passes their source as $2).
[ -z "${2:-}" ] || exit 0
sed -e '/^# -\{24\} >8 -\{24\}$/,$d' -e '/^#/d' "$1" | grep -q '[^[:space:]]' && exit 0
git diff --cached --quiet && exit 0
draft=$(git diff --cached | "$decode" ask -q ${DECODE_HOOK_MODEL:+"--model=$DECODE_HOOK_MODEL"} "$prompt")
status=$?
if [ $status -ne 0 ] || [ -z "$draft" ]; then
	echo "decode {{.Name}}: no message drafted (decode exited $status); write it yourself" >&2
	exit 0
fi
{ printf '%s\n' "$draft"; cat "$1"; } >"$1.decode" && mv "$1.decode" "$1"
{{- end}}
{{- if .Verdict}}
schema=$(mktemp "${TMPDIR:-/tmp}/decode-hook.XXXXXX") || exit 1
trap 'rm -f "$schema"' EXIT
printf '%s\n' '{{.Schema}}' >"$schema"
verdict=$(input | "$decode" ask -q --schema "$schema" ${DECODE_HOOK_MODEL:+"--model=$DECODE_HOOK_MODEL"} "$prompt")
status=$?
if [ $status -ne 0 ]; then
	echo "decode {{.Name}}: the check did not run (decode exited $status); skip it once with DECODE_HOOK_SKIP=1" >&2
	exit 1
fi
case $verdict in
'{"ok":true'*) exit 0 ;;
esac
reason=$(printf '%s\n' "$verdict" | sed -n 's/^{"ok":false,"reason":"\(.*\)"}$/\1/p')
echo "decode {{.Name}}: ${reason:-$verdict}" >&2
echo "decode {{.Name}}: stopped (decode log @ shows the session; DECODE_HOOK_SKIP=1 skips the check once)" >&2
exit 1
{{- end}}
`
