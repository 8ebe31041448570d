package secrets

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// KernelKeyring keeps keys in the Linux kernel's user keyring (keyctl), the
// store that works on a headless machine: no daemon, no file. Keys last
// until the machine restarts (or the user's last session ends).
type KernelKeyring struct {
	// Namespace prefixes each key's description ("decode" by default), so
	// that profiles (or tests) keep apart.
	Namespace string
}

// NewKernelKeyring returns the kernel keyring store, or an error when the
// kernel (or a container's seccomp policy) refuses keyctl.
func NewKernelKeyring(namespace string) (*KernelKeyring, error) {
	if namespace == "" {
		namespace = "decode"
	}
	if _, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_USER_KEYRING, true); err != nil {
		return nil, fmt.Errorf("the kernel keyring is not available here: %w", err)
	}
	return &KernelKeyring{Namespace: namespace}, nil
}

func (k *KernelKeyring) Name() string { return "kernel keyring (" + k.Namespace + ")" }

func (k *KernelKeyring) desc(provider string) string { return k.Namespace + ":" + provider }

func (k *KernelKeyring) Get(provider string) (string, error) {
	id, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", k.desc(provider), 0)
	if errors.Is(err, unix.ENOKEY) || errors.Is(err, unix.EKEYREVOKED) || errors.Is(err, unix.EKEYEXPIRED) {
		return "", ErrNoKey
	}
	if err != nil {
		return "", fmt.Errorf("kernel keyring: %w", err)
	}
	buf := make([]byte, 4096)
	n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, id, buf, 0)
	if err != nil {
		return "", fmt.Errorf("kernel keyring: %w", err)
	}
	if n > len(buf) {
		return "", errors.New("kernel keyring: key longer than 4 KiB")
	}
	return string(buf[:n]), nil
}

func (k *KernelKeyring) Set(provider, key string) error {
	if _, err := unix.AddKey("user", k.desc(provider), []byte(key), unix.KEY_SPEC_USER_KEYRING); err != nil {
		return fmt.Errorf("kernel keyring: %w", err)
	}
	return nil
}

func (k *KernelKeyring) Delete(provider string) error {
	id, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", k.desc(provider), 0)
	if errors.Is(err, unix.ENOKEY) {
		return ErrNoKey
	}
	if err != nil {
		return fmt.Errorf("kernel keyring: %w", err)
	}
	if _, err := unix.KeyctlInt(unix.KEYCTL_UNLINK, id, unix.KEY_SPEC_USER_KEYRING, 0, 0); err != nil {
		return fmt.Errorf("kernel keyring: %w", err)
	}
	return nil
}
