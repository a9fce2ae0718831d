package main

// The Go email validators (tests/frameworks/README.md): net/mail as an app uses it, each answering
// what the app would store (the parsed Address), or nothing when it refuses.

import (
	"net/mail"
	"sort"
	strs "strings"
)

var validators = map[string]func(v string) []string{
	"go.mail.ParseAddress": func(v string) []string {
		a, err := mail.ParseAddress(v)
		if err != nil {
			return nil
		}
		return []string{a.Address}
	},
	"go.mail.ParseAddressList": func(v string) []string {
		as, err := mail.ParseAddressList(v)
		if err != nil {
			return nil
		}
		out := []string{}
		for _, a := range as {
			out = append(out, a.Address)
		}
		return out
	},
}

// validate answers {validator: [[value, stored], ...]} for the values with an @ each accepted.
func validate(values map[string]bool) map[string][][2]string {
	sorted := []string{}
	for v := range values {
		if strs.Contains(v, "@") || strs.Contains(v, "\uff20") {
			sorted = append(sorted, v)
		}
	}
	sort.Strings(sorted)
	out := map[string][][2]string{}
	for name, f := range validators {
		out[name] = [][2]string{}
		for _, v := range sorted {
			for _, s := range f(v) {
				out[name] = append(out[name], [2]string{v, s})
			}
		}
	}
	return out
}

// jsonKeys gathers object keys at any depth (an app may take addresses from them).
func jsonKeys(v any, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, y := range x {
			out[k] = true
			jsonKeys(y, out)
		}
	case []any:
		for _, y := range x {
			jsonKeys(y, out)
		}
	}
}
