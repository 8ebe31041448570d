package secrets

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Claim is what an approval, a denial or an answer vouches for: one
// decision about one call of one session. Its MAC or signature covers every
// field, so a decision cannot be moved to another session or call (replay),
// to other arguments (tampering), or turned from deny into allow.
type Claim struct {
	Session  string
	CallID   string
	Tool     string
	Args     json.RawMessage
	Decision string
	// Text is the denial's reason or the answer.
	Text string
}

// sshNamespace scopes SSH signatures to decode approvals, so a signature
// made for git commits (namespace "git") never passes as one.
const sshNamespace = "decode-approval"

// message is the canonical bytes a claim's MAC or signature covers.
func (c Claim) message() []byte {
	var b bytes.Buffer
	b.WriteString("decode-approval-v1\x00")
	for _, f := range []string{c.Session, c.CallID, c.Tool, string(CanonicalJSON(c.Args)), c.Decision, c.Text} {
		fmt.Fprintf(&b, "%d:%s\x00", len(f), f)
	}
	return b.Bytes()
}

// CanonicalJSON re-encodes a JSON value with sorted keys and no spaces, so
// the same arguments give the same bytes on any machine; invalid JSON is
// kept as its trimmed bytes.
func CanonicalJSON(raw json.RawMessage) []byte {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return bytes.TrimSpace(raw)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return bytes.TrimSpace(raw)
	}
	return out
}

// macPrefix marks the MAC's algorithm, so another can follow.
const macPrefix = "hmac-sha256:"

// MAC returns the claim's HMAC-SHA256 under key.
func MAC(key []byte, c Claim) string {
	m := hmac.New(sha256.New, key)
	m.Write(c.message())
	return macPrefix + hex.EncodeToString(m.Sum(nil))
}

// VerifyMAC reports whether mac is the claim's MAC under key (in constant
// time).
func VerifyMAC(key []byte, c Claim, mac string) bool {
	got, ok := strings.CutPrefix(mac, macPrefix)
	if !ok || len(key) == 0 {
		return false
	}
	raw, err := hex.DecodeString(got)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, key)
	m.Write(c.message())
	return hmac.Equal(raw, m.Sum(nil))
}

// keySize is the approval key's length: as long as SHA-256's block needs.
const keySize = 32

// ApprovalKey returns the per-user approval key kept at path, creating it
// (32 random bytes, mode 0600, in a directory of mode 0700) on first use. A
// key file that others can read, or of the wrong size, is an error: it
// could be read to forge approvals.
func ApprovalKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return createKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("approval key: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("approval key %s is readable by others (mode %v); chmod 600 it, or delete it to make a new one (pending approvals must then be given again)", path, fi.Mode().Perm())
	}
	if len(key) != keySize {
		return nil, fmt.Errorf("approval key %s is %d bytes, not %d; delete it to make a new one (pending approvals must then be given again)", path, len(key), keySize)
	}
	return key, nil
}

func createKey(path string) ([]byte, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("approval key: %w", err)
	}
	key := make([]byte, keySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("approval key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return ApprovalKey(path) // another process made it first
	}
	if err != nil {
		return nil, fmt.Errorf("approval key: %w", err)
	}
	_, err = f.Write(key)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("approval key: %w", err)
	}
	return key, nil
}

// SSHSign signs the claim with the SSH key at keyFile (a private key, or a
// public key whose private half an ssh-agent holds) through ssh-keygen -Y
// sign, as git's SSH commit signing does. It returns the armored signature.
func SSHSign(ctx context.Context, keyFile string, c Claim) (string, error) {
	dir, err := os.MkdirTemp("", "decode-sign-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	msg := filepath.Join(dir, "approval")
	if err := os.WriteFile(msg, c.message(), 0o600); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "ssh-keygen", "-Y", "sign", "-f", keyFile, "-n", sshNamespace, msg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("ssh-keygen -Y sign with %s: %v: %s", keyFile, err, strings.TrimSpace(stderr.String()))
	}
	sig, err := os.ReadFile(msg + ".sig")
	if err != nil {
		return "", err
	}
	return string(sig), nil
}

// SSHVerify checks an armored signature of the claim by principal (an
// email, as in git's allowed signers file) against allowedSigners, through
// ssh-keygen -Y verify.
func SSHVerify(ctx context.Context, allowedSigners, principal string, c Claim, sig string) error {
	if allowedSigners == "" {
		return errors.New("no allowed signers file (git config gpg.ssh.allowedSignersFile) to check SSH-signed approvals against")
	}
	if principal == "" || strings.ContainsAny(principal, "\n\x00") {
		return errors.New("the signature names no signer")
	}
	dir, err := os.MkdirTemp("", "decode-verify-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sigFile := filepath.Join(dir, "approval.sig")
	if err := os.WriteFile(sigFile, []byte(sig), 0o600); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "ssh-keygen", "-Y", "verify", "-f", allowedSigners, "-I", principal, "-n", sshNamespace, "-s", sigFile)
	cmd.Stdin = bytes.NewReader(c.message())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("the SSH signature of %s does not verify against %s: %s", principal, allowedSigners, strings.TrimSpace(out.String()))
	}
	return nil
}
