// Package certgen makes the certificates a secured cluster needs: a CA, and
// broker or client certificates it signs, written as PEM files (and PKCS12
// keystores for Java clients). `ktool cert`, `ktool cluster up --secure` and the
// security tests use it.
package certgen

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"software.sslmate.com/src/go-pkcs12"
)

// Organization is the O= of every certificate this package makes (their
// subjects are CN=<name>,O=ktool).
const Organization = "ktool"

// Pair is a certificate and its private key.
type Pair struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// Options describe a certificate to make.
type Options struct {
	CommonName string
	// Hosts are DNS names or IP addresses for the subject alternative names
	// (server certificates).
	Hosts     []string
	NotBefore time.Time // zero: now - 1h
	Validity  time.Duration
	Client    bool // client authentication usage (mTLS) besides server
}

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// NewCA makes a self-signed certificate authority.
func NewCA(name string, validity time.Duration) (*Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn, Subject: pkix.Name{CommonName: name, Organization: []string{Organization}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(validity),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &Pair{Cert: cert, Key: key}, nil
}

// Sign makes a certificate signed by ca.
func (ca *Pair) Sign(o Options) (*Pair, error) {
	if o.CommonName == "" {
		return nil, errors.New("a certificate needs a common name")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	nb := o.NotBefore
	if nb.IsZero() {
		nb = time.Now().Add(-time.Hour)
	}
	if o.Validity <= 0 {
		o.Validity = 365 * 24 * time.Hour
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn, Subject: pkix.Name{CommonName: o.CommonName, Organization: []string{Organization}},
		NotBefore: nb, NotAfter: nb.Add(o.Validity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if o.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	for _, h := range o.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &Pair{Cert: cert, Key: key}, nil
}

// CertPEM is the certificate in PEM.
func (p *Pair) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.Cert.Raw})
}

// KeyPEM is the private key in unencrypted PKCS8 PEM.
func (p *Pair) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(p.Key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// Files are the paths WriteFiles wrote.
type Files struct {
	Cert, Key, Keystore string // <name>.crt, <name>.key, <name>.p12
}

// WriteFiles writes <dir>/<name>.crt (with the CA after it), <name>.key and a
// PKCS12 keystore <name>.p12 protected by password. Keys are mode 0600.
func (p *Pair) WriteFiles(dir, name string, ca *Pair, password string) (Files, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Files{}, err
	}
	f := Files{Cert: filepath.Join(dir, name+".crt"), Key: filepath.Join(dir, name+".key"), Keystore: filepath.Join(dir, name+".p12")}
	chain := p.CertPEM()
	if ca != nil {
		chain = append(chain, ca.CertPEM()...)
	}
	if err := os.WriteFile(f.Cert, chain, 0o644); err != nil {
		return Files{}, err
	}
	key, err := p.KeyPEM()
	if err != nil {
		return Files{}, err
	}
	if err := os.WriteFile(f.Key, key, 0o600); err != nil {
		return Files{}, err
	}
	var cas []*x509.Certificate
	if ca != nil {
		cas = []*x509.Certificate{ca.Cert}
	}
	p12, err := pkcs12.Modern.Encode(p.Key, p.Cert, cas, password)
	if err != nil {
		return Files{}, fmt.Errorf("PKCS12 keystore: %w", err)
	}
	if err := os.WriteFile(f.Keystore, p12, 0o600); err != nil {
		return Files{}, err
	}
	return f, nil
}

// WriteCA writes ca.crt, ca.key and a PKCS12 truststore ca-truststore.p12.
func (ca *Pair) WriteCA(dir, password string) (cert, key, truststore string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", "", err
	}
	cert, key, truststore = filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key"), filepath.Join(dir, "ca-truststore.p12")
	if err := os.WriteFile(cert, ca.CertPEM(), 0o644); err != nil {
		return "", "", "", err
	}
	k, err := ca.KeyPEM()
	if err != nil {
		return "", "", "", err
	}
	if err := os.WriteFile(key, k, 0o600); err != nil {
		return "", "", "", err
	}
	ts, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{ca.Cert}, password)
	if err != nil {
		return "", "", "", err
	}
	if err := os.WriteFile(truststore, ts, 0o644); err != nil {
		return "", "", "", err
	}
	return cert, key, truststore, nil
}

// LoadCA reads a CA written by WriteCA.
func LoadCA(certFile, keyFile string) (*Pair, error) {
	cb, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	kb, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, err
	}
	cblock, _ := pem.Decode(cb)
	kblock, _ := pem.Decode(kb)
	if cblock == nil || kblock == nil {
		return nil, fmt.Errorf("%s or %s is not PEM", certFile, keyFile)
	}
	cert, err := x509.ParseCertificate(cblock.Bytes)
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKCS8PrivateKey(kblock.Bytes)
	if err != nil {
		return nil, err
	}
	ek, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: the CA key is not ECDSA", keyFile)
	}
	return &Pair{Cert: cert, Key: ek}, nil
}
