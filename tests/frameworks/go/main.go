// The Go reader of tests/frameworks (README.md there): an HTTP server (net/http, the standard
// library only) on 127.0.0.1:PORT that answers what the standard library reads from every request:
// r.ParseForm (r.Form, r.PostForm), r.ParseMultipartForm (r.Form with r.MultipartForm.Value), r.URL.Query()
// and json.NewDecoder(r.Body) into `any`, each on its own copy of the request.
//
//	framework-readers PORT
//	framework-readers client URL   (a real client: multipart.Writer's upload of email=ann@gmail.com)
//
// Answer: {"readers": {"<name>": {"values": [every string value, any depth], "error": null|"..."}}}
// With a request header `x-validators`, also "validators": what net/mail would store from those
// values (and from JSON object keys and query names): validators.go.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
)

type reading struct {
	Values []string `json:"values"`
	Error  *string  `json:"error"`
}

// strings appends every string at any depth (object keys are names, not values).
func strings(v any, out []string) []string {
	switch x := v.(type) {
	case string:
		out = append(out, x)
	case []any:
		for _, e := range x {
			out = strings(e, out)
		}
	case map[string]any:
		for _, e := range x {
			out = strings(e, out)
		}
	}
	return out
}

func values(v url.Values) []string {
	out := []string{}
	for _, vs := range v {
		out = append(out, vs...)
	}
	return out
}

// A fresh copy of the request with the received body, as a handler would get it.
func fresh(r *http.Request, body []byte) *http.Request {
	c := r.Clone(r.Context())
	c.Body = io.NopCloser(bytes.NewReader(body))
	return c
}

var readers = map[string]func(r *http.Request) ([]string, error){
	"go.ParseForm.Form": func(r *http.Request) ([]string, error) {
		err := r.ParseForm()
		return values(r.Form), err
	},
	"go.ParseForm.PostForm": func(r *http.Request) ([]string, error) {
		err := r.ParseForm()
		return values(r.PostForm), err
	},
	"go.ParseMultipartForm": func(r *http.Request) ([]string, error) {
		// r.Form holds the query, the urlencoded body and r.MultipartForm.Value.
		err := r.ParseMultipartForm(32 << 20)
		return values(r.Form), err
	},
	"go.URL.Query": func(r *http.Request) ([]string, error) {
		return values(r.URL.Query()), nil
	},
	"go.json.Decoder": func(r *http.Request) ([]string, error) {
		var v any
		err := json.NewDecoder(r.Body).Decode(&v)
		return strings(v, []string{}), err
	},
}

func handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	out := map[string]reading{}
	for name, read := range readers {
		vs, err := read(fresh(r, body))
		rd := reading{Values: vs}
		if rd.Values == nil {
			rd.Values = []string{}
		}
		if err != nil {
			msg := err.Error()
			rd.Error = &msg
		}
		out[name] = rd
	}
	answer := map[string]any{"readers": out}
	if r.Header.Get("x-validators") != "" {
		values := map[string]bool{}
		for _, rd := range out {
			for _, v := range rd.Values {
				values[v] = true
			}
		}
		var doc any
		if json.Unmarshal(body, &doc) == nil {
			jsonKeys(doc, values)
		}
		for k := range fresh(r, body).URL.Query() {
			values[k] = true
		}
		answer["validators"] = validate(values)
	}
	w.Header().Set("content-type", "application/json")
	_ = json.NewEncoder(w).Encode(answer)
}

// client posts email=ann@gmail.com as multipart.Writer writes it and prints the status.
func client(target string) error {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if err := mw.WriteField("email", "ann@gmail.com"); err != nil {
		return err
	}
	if err := mw.WriteField("name", "Ann"); err != nil {
		return err
	}
	if err := mw.Close(); err != nil {
		return err
	}
	resp, err := http.Post(target, mw.FormDataContentType(), &buf)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	fmt.Println(resp.StatusCode)
	return nil
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == "client" {
		if err := client(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: framework-readers PORT | framework-readers client URL")
		os.Exit(2)
	}
	http.HandleFunc("/", handle)
	if err := http.ListenAndServe("127.0.0.1:"+os.Args[1], nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
