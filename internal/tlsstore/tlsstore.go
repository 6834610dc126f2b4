// Package tlsstore reads the key and trust stores Kafka's ssl.keystore.* and
// ssl.truststore.* settings name: PEM files or inline PEM (KIP-651) and PKCS12.
// Brokers (server.properties) and the toolbox (client.properties) read the
// same settings, so both use it.
package tlsstore

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"software.sslmate.com/src/go-pkcs12"
)

// Stores are the ssl.keystore.* and ssl.truststore.* settings.
type Stores struct {
	KeystoreType             string // ssl.keystore.type: PEM or PKCS12 (JKS when empty, which is refused)
	KeystoreLocation         string
	KeystorePassword         string
	KeystoreKey              string // inline PEM key (KIP-651)
	KeystoreCertificateChain string // inline PEM chain (KIP-651)
	TruststoreType           string
	TruststoreLocation       string
	TruststorePassword       string
	TruststoreCertificates   string // inline PEM (KIP-651)
}

// Files are the store files, to watch for changes.
func (s Stores) Files() []string {
	var out []string
	for _, f := range []string{s.KeystoreLocation, s.TruststoreLocation} {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// Keystore reads the certificate chain and key named by ssl.keystore.* (PEM
// files or inline PEM per KIP-651, or PKCS12). ok is false when none is set.
func (s Stores) Keystore() (cert tls.Certificate, ok bool, err error) {
	typ := strings.ToUpper(or(s.KeystoreType, "JKS"))
	loc := s.KeystoreLocation
	inlineKey := s.KeystoreKey
	inlineChain := s.KeystoreCertificateChain
	if loc == "" && inlineKey == "" && inlineChain == "" {
		return tls.Certificate{}, false, nil
	}
	switch typ {
	case "PEM":
		var data []byte
		if loc != "" {
			if inlineKey != "" || inlineChain != "" {
				return tls.Certificate{}, false, errors.New("ssl.keystore.location and ssl.keystore.key/certificate.chain are both set; use one")
			}
			if data, err = os.ReadFile(loc); err != nil {
				return tls.Certificate{}, false, fmt.Errorf("ssl.keystore.location: %w", err)
			}
		} else {
			if inlineKey == "" || inlineChain == "" {
				return tls.Certificate{}, false, errors.New("ssl.keystore.key and ssl.keystore.certificate.chain must be set together")
			}
			data = []byte(inlineChain + "\n" + inlineKey)
		}
		cert, err := pemKeyPair(data)
		if err != nil {
			return tls.Certificate{}, false, fmt.Errorf("PEM keystore %s: %w", orInline(loc), err)
		}
		return cert, true, nil
	case "PKCS12":
		if loc == "" {
			return tls.Certificate{}, false, errors.New("ssl.keystore.type=PKCS12 needs ssl.keystore.location")
		}
		data, err := os.ReadFile(loc)
		if err != nil {
			return tls.Certificate{}, false, fmt.Errorf("ssl.keystore.location: %w", err)
		}
		key, leaf, cas, err := pkcs12.DecodeChain(data, s.KeystorePassword)
		if err != nil {
			return tls.Certificate{}, false, fmt.Errorf("PKCS12 keystore %s: %w", loc, err)
		}
		cert := tls.Certificate{PrivateKey: key, Leaf: leaf, Certificate: [][]byte{leaf.Raw}}
		for _, c := range cas {
			cert.Certificate = append(cert.Certificate, c.Raw)
		}
		return cert, true, nil
	case "JKS":
		return tls.Certificate{}, false, fmt.Errorf("ssl.keystore.type=JKS is not supported: set ssl.keystore.type=PKCS12 " +
			"(keytool -importkeystore -deststoretype PKCS12) or PEM")
	default:
		return tls.Certificate{}, false, fmt.Errorf("ssl.keystore.type %q: want PEM or PKCS12", typ)
	}
}

func orInline(loc string) string {
	if loc == "" {
		return "(inline)"
	}
	return loc
}

// pemKeyPair takes the certificates and the one private key out of PEM data in
// any order.
func pemKeyPair(data []byte) (tls.Certificate, error) {
	var cert tls.Certificate
	var keyDER []byte
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		switch {
		case block.Type == "CERTIFICATE":
			cert.Certificate = append(cert.Certificate, block.Bytes)
		case block.Type == "ENCRYPTED PRIVATE KEY" || block.Headers["Proc-Type"] != "":
			return tls.Certificate{}, errors.New("the private key is encrypted; ktool reads unencrypted PEM keys " +
				"(openssl pkcs8 -topk8 -nocrypt) or PKCS12 keystores with a password")
		case strings.HasSuffix(block.Type, "PRIVATE KEY"):
			if keyDER != nil {
				return tls.Certificate{}, errors.New("more than one private key")
			}
			keyDER = block.Bytes
		}
	}
	if len(cert.Certificate) == 0 {
		return tls.Certificate{}, errors.New("no CERTIFICATE block")
	}
	if keyDER == nil {
		return tls.Certificate{}, errors.New("no PRIVATE KEY block")
	}
	key, err := parseKey(keyDER)
	if err != nil {
		return tls.Certificate{}, err
	}
	cert.PrivateKey = key
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return tls.Certificate{}, err
	}
	cert.Leaf = leaf
	pub, ok := leaf.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	signer, sok := key.(crypto.Signer)
	if !ok || !sok || !pub.Equal(signer.Public()) {
		return tls.Certificate{}, errors.New("the private key does not match the first certificate")
	}
	return cert, nil
}

func parseKey(der []byte) (crypto.PrivateKey, error) {
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k, nil
	}
	return nil, errors.New("unreadable private key (want PKCS8, PKCS1 or EC)")
}

// Truststore reads the CA certificates named by ssl.truststore.*; nil (with ok
// false) when none is set, meaning the system roots.
func (s Stores) Truststore() (pool *x509.CertPool, ok bool, err error) {
	typ := strings.ToUpper(or(s.TruststoreType, "JKS"))
	loc := s.TruststoreLocation
	inline := s.TruststoreCertificates
	if loc == "" && inline == "" {
		return nil, false, nil
	}
	pool = x509.NewCertPool()
	switch typ {
	case "PEM":
		data := []byte(inline)
		if loc != "" {
			if data, err = os.ReadFile(loc); err != nil {
				return nil, false, fmt.Errorf("ssl.truststore.location: %w", err)
			}
		}
		if !pool.AppendCertsFromPEM(data) {
			return nil, false, fmt.Errorf("PEM truststore %s holds no certificate", orInline(loc))
		}
	case "PKCS12":
		data, err := os.ReadFile(loc)
		if err != nil {
			return nil, false, fmt.Errorf("ssl.truststore.location: %w", err)
		}
		certs, err := pkcs12.DecodeTrustStore(data, s.TruststorePassword)
		if err != nil {
			return nil, false, fmt.Errorf("PKCS12 truststore %s: %w", loc, err)
		}
		for _, c := range certs {
			pool.AddCert(c)
		}
	case "JKS":
		return nil, false, fmt.Errorf("ssl.truststore.type=JKS is not supported: set ssl.truststore.type=PKCS12 or PEM")
	default:
		return nil, false, fmt.Errorf("ssl.truststore.type %q: want PEM or PKCS12", typ)
	}
	return pool, true, nil
}

// VerifyChain checks a peer's certificate chain against roots without checking
// its name: Kafka's ssl.endpoint.identification.algorithm set empty. Go's
// verification is off in such a tls.Config (InsecureSkipVerify), so this runs
// as its VerifyPeerCertificate.
func VerifyChain(raw [][]byte, roots *x509.CertPool) error {
	if len(raw) == 0 {
		return errors.New("the peer sent no certificate")
	}
	certs := make([]*x509.Certificate, len(raw))
	for i, r := range raw {
		c, err := x509.ParseCertificate(r)
		if err != nil {
			return err
		}
		certs[i] = c
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
	return err
}
