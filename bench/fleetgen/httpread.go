package main

// A minimal HTTP/1.1 response reader: status line, headers, Content-Length body.
//
// net/http's client buffers, allocates and runs goroutines per connection; under a
// 10,000-connection open-loop load that showed up as ~100 ms stalls that looked like
// server latency. This reader allocates nothing per response once its buffers have grown.

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

var (
	errStatusLine  = errors.New("malformed status line")
	errHeader      = errors.New("malformed header")
	errNoLength    = errors.New("response without Content-Length")
	errChunked     = errors.New("chunked response (not supported)")
	errHeaderLarge = errors.New("header line too long")
)

// response is what one read leaves behind; body aliases the reader's buffer.
type response struct {
	status int
	body   []byte
	close  bool
}

// responseReader reads responses from one connection, reusing its body buffer.
type responseReader struct {
	br  *bufio.Reader
	buf []byte
}

func newResponseReader(r io.Reader) *responseReader {
	return &responseReader{br: bufio.NewReaderSize(r, 4096), buf: make([]byte, 0, 1024)}
}

func (rr *responseReader) line() ([]byte, error) {
	line, err := rr.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, errHeaderLarge
	}
	return line, err
}

// read reads one whole response (a HEAD-less client: every response has a body length).
func (rr *responseReader) read() (response, error) {
	var out response
	line, err := rr.line()
	if err != nil {
		return out, err
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return out, errStatusLine
	}
	status := 0
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return out, errStatusLine
		}
		status = status*10 + int(c-'0')
	}
	out.status = status
	out.close = line[7] == '0' // HTTP/1.0 closes unless told otherwise
	length := -1
	for {
		line, err = rr.line()
		if err != nil {
			return out, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return out, errHeader
		}
		name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
		switch {
		case asciiEqualFold(name, "content-length"):
			n, ok := parseDecimal(value)
			if !ok {
				return out, errHeader
			}
			length = n
		case asciiEqualFold(name, "transfer-encoding"):
			return out, errChunked
		case asciiEqualFold(name, "connection"):
			out.close = asciiEqualFold(value, "close")
		}
	}
	if status == 204 || status == 304 || (status >= 100 && status < 200) {
		length = 0
	}
	if length < 0 {
		return out, errNoLength
	}
	if cap(rr.buf) < length {
		rr.buf = make([]byte, length)
	}
	rr.buf = rr.buf[:length]
	if _, err = io.ReadFull(rr.br, rr.buf); err != nil {
		return out, err
	}
	out.body = rr.buf
	return out, nil
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

func parseDecimal(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 12 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
