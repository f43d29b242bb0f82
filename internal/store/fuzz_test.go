package store

import (
	"bytes"
	"testing"
)

// FuzzStoreEntry: the entry decoder never panics on any bytes, and an
// entry it accepts is exactly the encoding of the payload it returns
// (so nothing but what Put writes is ever trusted), starts with the
// header Trim recognises the store's own entries by, and would be
// removed by Get if damaged (ours).
func FuzzStoreEntry(f *testing.F) {
	const key = "4cbe838bafe079aa41783cbf7c3ae18750858db9fb7f09ff93b89dad993dbf45"
	good := Encode(key, []byte(`{"key":"`+key+`","outcome":{"verdict":"safe","trace_sha256":"ab"},"cpu_ns":5}`))
	f.Add(good)
	f.Add(Encode(key, nil))
	f.Add(good[:20])                                              // torn header
	f.Add(good[:len(good)-3])                                     // truncated payload
	f.Add(bytes.Replace(good, []byte("safe"), []byte("sane"), 1)) // checksum fails
	f.Add(bytes.Replace(good, []byte(magic), []byte(magic+"0"), 1))
	f.Add(bytes.ToUpper(good))
	f.Add([]byte{})
	f.Add([]byte("\n\n\n"))
	f.Add([]byte(magic + key + "\n" + "zz\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		payload, err := Decode(key, data)
		if err != nil {
			return
		}
		if again := Encode(key, payload); !bytes.Equal(again, data) {
			t.Fatalf("accepted %q, which is not the encoding of its payload %q", data, payload)
		}
		if !bytes.HasPrefix(data, []byte(magic+key+"\n")) || !ours(data) {
			t.Fatalf("accepted %q without the entry header", data)
		}
		if _, err := Decode(key[1:]+"0", data); err == nil {
			t.Fatalf("%q accepted under another key", data)
		}
	})
}
