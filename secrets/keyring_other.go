//go:build !linux

package secrets

import "errors"

// KernelKeyring exists on Linux only.
type KernelKeyring struct{ Namespace string }

// NewKernelKeyring reports that there is no kernel keyring here.
func NewKernelKeyring(string) (*KernelKeyring, error) {
	return nil, errors.New("no kernel keyring on this system")
}

func (k *KernelKeyring) Name() string               { return "kernel keyring" }
func (k *KernelKeyring) Get(string) (string, error) { return "", ErrNoKey }
func (k *KernelKeyring) Set(string, string) error {
	return errors.New("no kernel keyring on this system")
}
func (k *KernelKeyring) Delete(string) error { return ErrNoKey }
