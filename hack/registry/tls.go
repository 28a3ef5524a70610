package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// The files under -tls-dir. ca.crt is what a client trusts (a host's
// SSL_CERT_FILE bundle, hack/registry-host.sh); ca.key stays with the
// registry; tls.crt and tls.key are the serving pair, for -tls-names.
const (
	caCertFile = "ca.crt"
	caKeyFile  = "ca.key"
	certFile   = "tls.crt"
	keyFile    = "tls.key"
)

// serving returns the registry's TLS certificate for names, made under dir
// the first time: a CA of its own (kept, so a client's trust outlives a
// restart) and a serving certificate it signs, made again when it does not
// name every one of names or expires within a day. A user's registry has
// a certificate from a CA their hosts trust; this one plays that part for
// the names the local registry stands in for (quay.io, the IMAGE_TAG_BASE
// host), so a client that pulls over HTTPS only (operator-sdk run bundle
// reading an index image's labels) pulls from it unchanged.
func serving(dir string, names []string) (tls.Certificate, error) {
	if len(names) == 0 {
		return tls.Certificate{}, errors.New("-tls-names is empty: the serving certificate needs a name")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return tls.Certificate{}, err
	}
	ca, caKey, err := loadOrMakeCA(dir)
	if err != nil {
		return tls.Certificate{}, err
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, certFile), filepath.Join(dir, keyFile))
	if err == nil && covers(pair.Leaf, ca, names) {
		return pair, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: names[0]},
		DNSNames:     names,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	if err := writePEM(filepath.Join(dir, keyFile), "EC PRIVATE KEY", mustMarshalEC(key), 0o600); err != nil {
		return tls.Certificate{}, err
	}
	if err := writePEM(filepath.Join(dir, certFile), "CERTIFICATE", der, 0o644); err != nil {
		return tls.Certificate{}, err
	}
	return tls.LoadX509KeyPair(filepath.Join(dir, certFile), filepath.Join(dir, keyFile))
}

// covers reports whether leaf is signed by ca, names every one of names
// and is valid for at least a day more.
func covers(leaf, ca *x509.Certificate, names []string) bool {
	if leaf == nil || leaf.CheckSignatureFrom(ca) != nil || time.Until(leaf.NotAfter) < 24*time.Hour {
		return false
	}
	for _, n := range names {
		if !slices.Contains(leaf.DNSNames, n) {
			return false
		}
	}
	return true
}

func loadOrMakeCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPath, keyPath := filepath.Join(dir, caCertFile), filepath.Join(dir, caKeyFile)
	if certPEM, err := os.ReadFile(certPath); err == nil {
		keyPEM, err := os.ReadFile(keyPath)
		if err != nil {
			return nil, nil, err
		}
		cb, kb := decodePEM(certPEM), decodePEM(keyPEM)
		if cb == nil || kb == nil {
			return nil, nil, fmt.Errorf("%s or %s is not PEM: remove both to make a new CA", certPath, keyPath)
		}
		ca, err := x509.ParseCertificate(cb)
		if err != nil {
			return nil, nil, err
		}
		key, err := x509.ParseECPrivateKey(kb)
		if err != nil {
			return nil, nil, err
		}
		return ca, key, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "mydeployment local registry CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	if err := writePEM(keyPath, "EC PRIVATE KEY", mustMarshalEC(key), 0o600); err != nil {
		return nil, nil, err
	}
	if err := writePEM(certPath, "CERTIFICATE", der, 0o644); err != nil {
		return nil, nil, err
	}
	ca, err := x509.ParseCertificate(der)
	return ca, key, err
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err)
	}
	return n
}

func mustMarshalEC(key *ecdsa.PrivateKey) []byte {
	b, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		panic(err)
	}
	return b
}

func decodePEM(data []byte) []byte {
	b, _ := pem.Decode(data)
	if b == nil {
		return nil
	}
	return b.Bytes
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	if err := writeFileAtomic(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})); err != nil {
		return err
	}
	return os.Chmod(path, mode)
}
