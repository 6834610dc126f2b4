package consume

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Format is a compiled -f format string. Like kcat's -f: %t topic,
// %p partition, %o offset, %k key, %s value, %T timestamp (epoch ms),
// %h headers (k=v,k=v), %K key length, %S value length (-1 when null), %%
// a percent sign; \n, \t, \r and \\ escapes.
type Format struct {
	parts []part
}

type part struct {
	lit  string
	verb byte // 0 for a literal
}

// ParseFormat compiles a format string.
func ParseFormat(s string) (Format, error) {
	var f Format
	lit := []byte{}
	flush := func() {
		if len(lit) > 0 {
			f.parts = append(f.parts, part{lit: string(lit)})
			lit = lit[:0:0]
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			if i+1 == len(s) {
				return Format{}, fmt.Errorf("format %q ends in a lone backslash", s)
			}
			i++
			switch s[i] {
			case 'n':
				lit = append(lit, '\n')
			case 't':
				lit = append(lit, '\t')
			case 'r':
				lit = append(lit, '\r')
			case '\\':
				lit = append(lit, '\\')
			default:
				return Format{}, fmt.Errorf(`format %q: unknown escape \%c (known: \n \t \r \\)`, s, s[i])
			}
		case '%':
			if i+1 == len(s) {
				return Format{}, fmt.Errorf("format %q ends in a lone %%", s)
			}
			i++
			switch v := s[i]; v {
			case '%':
				lit = append(lit, '%')
			case 't', 'p', 'o', 'k', 's', 'T', 'h', 'K', 'S':
				flush()
				f.parts = append(f.parts, part{verb: v})
			default:
				return Format{}, fmt.Errorf("format %q: unknown directive %%%c (known: %%t %%p %%o %%k %%s %%T %%h %%K %%S %%%%)", s, v)
			}
		default:
			lit = append(lit, c)
		}
	}
	flush()
	return f, nil
}

// Append formats r onto dst.
func (f Format) Append(dst []byte, r *kgo.Record) []byte {
	for _, p := range f.parts {
		switch p.verb {
		case 0:
			dst = append(dst, p.lit...)
		case 't':
			dst = append(dst, r.Topic...)
		case 'p':
			dst = strconv.AppendInt(dst, int64(r.Partition), 10)
		case 'o':
			dst = strconv.AppendInt(dst, r.Offset, 10)
		case 'k':
			dst = append(dst, r.Key...)
		case 's':
			dst = append(dst, r.Value...)
		case 'T':
			dst = strconv.AppendInt(dst, r.Timestamp.UnixMilli(), 10)
		case 'K':
			dst = appendLen(dst, r.Key)
		case 'S':
			dst = appendLen(dst, r.Value)
		case 'h':
			for i, h := range r.Headers {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, h.Key...)
				dst = append(dst, '=')
				dst = append(dst, h.Value...)
			}
		}
	}
	return dst
}

func appendLen(dst, b []byte) []byte {
	if b == nil {
		return append(dst, "-1"...)
	}
	return strconv.AppendInt(dst, int64(len(b)), 10)
}
