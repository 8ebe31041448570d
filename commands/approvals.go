package commands

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"decode/agent/llm"
	"decode/secrets"
	"decode/session"
)

// Ways to sign a decision (approval_signing in the user's config).
const (
	signingMAC = "mac" // HMAC-SHA256 with the user's approval key (the default)
	signingSSH = "ssh" // the user's SSH key, as git signs commits
)

// approvalKeyPath is the user's approval key: under $XDG_STATE_HOME/decode
// (~/.local/state/decode), outside every workspace, in a directory of its
// own that the tool sandbox does not grant.
func (f *Factory) approvalKeyPath() string {
	state := f.Getenv("XDG_STATE_HOME")
	if state == "" {
		state = filepath.Join(f.home(), ".local", "state")
	}
	return filepath.Join(state, "decode", "keys", "approval.key")
}

// claimFor is what a decision about call in session id vouches for.
func claimFor(id string, d session.ApprovalData, tool string, args []byte) secrets.Claim {
	text := d.Reason
	if d.Decision == decisionAnswer {
		text = d.Answer
	}
	return secrets.Claim{Session: id, CallID: d.CallID, Tool: tool, Args: args, Decision: d.Decision, Text: text}
}

// signDecision authenticates d, a decision about r in session id: a MAC
// with the user's approval key, or, with approval_signing = "ssh", a
// signature by the SSH key git signs with (user.signingkey), naming
// user.email as the signer.
func (f *Factory) signDecision(ctx context.Context, cfg Config, dir, id string, d *session.ApprovalData, r session.ApprovalRequestData) error {
	c := claimFor(id, *d, r.Name, r.Args)
	switch cfg.ApprovalSigning {
	case "", signingMAC:
		key, err := secrets.ApprovalKey(f.approvalKeyPath())
		if err != nil {
			return err
		}
		d.MAC = secrets.MAC(key, c)
		return nil
	case signingSSH:
		keyFile := gitConfig(ctx, dir, "user.signingkey")
		signer := gitConfig(ctx, dir, "user.email")
		if keyFile == "" || signer == "" {
			return fmt.Errorf(`approval_signing = "ssh" signs with git's SSH signing key: set git config user.signingkey (the key's path) and user.email`)
		}
		sig, err := secrets.SSHSign(ctx, expandHome(keyFile, f.home()), c)
		if err != nil {
			return err
		}
		d.SSHSig, d.Signer = sig, signer
		return nil
	}
	return fmt.Errorf("approval_signing = %q: use \"mac\" or \"ssh\"", cfg.ApprovalSigning)
}

// decisionVerifier authenticates the decisions a resume of session id acts
// on: a MAC must verify under this user's approval key, an SSH signature
// against git's gpg.ssh.allowedSignersFile. Anything else is refused with
// what to do.
func (f *Factory) decisionVerifier(dir, id string) func(session.ApprovalData, llm.ToolCall) error {
	return func(d session.ApprovalData, call llm.ToolCall) error {
		c := claimFor(id, d, call.Name, call.Args)
		again := fmt.Sprintf("give it again with decode %s %s %s", verbOf(d.Decision), id, d.CallID)
		switch {
		case d.MAC != "":
			key, err := secrets.ApprovalKey(f.approvalKeyPath())
			if err != nil {
				return err
			}
			if !secrets.VerifyMAC(key, c, d.MAC) {
				return fmt.Errorf("its MAC does not verify (altered, copied from another session or call, or made with another user's key); %s", again)
			}
			return nil
		case d.SSHSig != "":
			ctx := context.Background()
			allowed := expandHome(gitConfig(ctx, dir, "gpg.ssh.allowedSignersFile"), f.home())
			if err := secrets.SSHVerify(ctx, allowed, d.Signer, c, d.SSHSig); err != nil {
				return fmt.Errorf("%v; %s", err, again)
			}
			return nil
		}
		return fmt.Errorf("it is not signed (recorded before decode signed decisions, or written by hand); %s", again)
	}
}

// verbOf is the command that records a decision.
func verbOf(decision string) string {
	switch decision {
	case decisionDeny:
		return "deny"
	case decisionAnswer:
		return "answer"
	}
	return "approve"
}

// gitConfig reads one git config value as git sees it in dir; "" when unset.
func gitConfig(ctx context.Context, dir, name string) string {
	cmd := exec.CommandContext(ctx, "git", "config", "--get", name)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// expandHome expands a leading ~/ as git does for paths in its config.
func expandHome(p, home string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return p
}
