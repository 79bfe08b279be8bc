package container

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
	"unsafe"
)

// fill sets every exported field reachable from v to a non-zero value:
// pointers and maps made, slices of two.
func fill(t *testing.T, v reflect.Value, depth int) {
	if depth > 12 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), depth+1)
		v.Set(p)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 11, 22, 1, 2, 3, 4, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		n := 2
		if v.Type().Elem().Kind() == reflect.Uint8 {
			n = 6 // MAC addresses have six
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fill(t, s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fill(t, v.Index(i), depth+1)
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for i := range 2 {
			k := reflect.New(v.Type().Key()).Elem()
			switch k.Kind() {
			case reflect.String:
				k.SetString(string(rune('a' + i)))
			case reflect.Int, reflect.Int64, reflect.Int32:
				k.SetInt(int64(i + 1))
			default:
				fill(t, k, depth+1)
			}
			e := reflect.New(v.Type().Elem()).Elem()
			fill(t, e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.String:
		v.SetString("s")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Interface:
		// Records hold no interface values; leave them nil.
	default:
		t.Fatalf("fill: unexpected kind %s (%s)", v.Kind(), v.Type())
	}
}

// sharesMemory reports the first pointer, slice or map that a and b
// share, walking exported fields.
func sharesMemory(a, b reflect.Value, path string) string {
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() {
			return ""
		}
		// Values of size zero all live at one address.
		if a.Pointer() == b.Pointer() && a.Type().Elem().Size() > 0 {
			return path
		}
		return sharesMemory(a.Elem(), b.Elem(), path)
	case reflect.Map:
		if a.IsNil() {
			return ""
		}
		if a.Pointer() == b.Pointer() {
			return path
		}
		for it := a.MapRange(); it.Next(); {
			if p := sharesMemory(it.Value(), b.MapIndex(it.Key()), path+"[key]"); p != "" {
				return p
			}
		}
	case reflect.Slice:
		if a.Len() == 0 {
			return ""
		}
		if unsafe.Pointer(a.Index(0).UnsafeAddr()) == unsafe.Pointer(b.Index(0).UnsafeAddr()) {
			return path
		}
		for i := range a.Len() {
			if p := sharesMemory(a.Index(i), b.Index(i), path+"[i]"); p != "" {
				return p
			}
		}
	case reflect.Struct:
		for i := range a.NumField() {
			if a.Type().Field(i).IsExported() {
				if p := sharesMemory(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); p != "" {
					return p
				}
			}
		}
	}
	return ""
}

// TestDeepCopy: a copy of a record with every field set is equal to it,
// as JSON and as Go values, and shares no memory with it.
func TestDeepCopy(t *testing.T) {
	c := new(Container)
	fill(t, reflect.ValueOf(c).Elem(), 0)
	if c.HostConfig == nil || len(c.Mounts) != 2 || c.NetworkSettings == nil {
		t.Fatalf("fill left fields empty: %+v", c)
	}
	cp := deepCopy(c)
	if !reflect.DeepEqual(c, cp) {
		t.Error("the copy differs")
	}
	a, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(cp)
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Errorf("the copy encodes differently:\n%s\n%s", a, b)
	}
	if p := sharesMemory(reflect.ValueOf(c), reflect.ValueOf(cp), "Container"); p != "" {
		t.Errorf("the copy shares %s", p)
	}
	// Copying a record decoded from disk equals decoding it again, which is
	// what Get and Update handed out before.
	rec, err := decode(a)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := decode(a)
	if !reflect.DeepEqual(deepCopy(rec), again) {
		t.Error("copy of a decoded record differs from decoding it again")
	}
	if deepCopy(nil) != nil {
		t.Error("deepCopy(nil) is not nil")
	}
}

func BenchmarkRecordCopy(b *testing.B) {
	c := new(Container)
	fill(&testing.T{}, reflect.ValueOf(c).Elem(), 0)
	data, _ := json.Marshal(c)
	b.Run("deepCopy", func(b *testing.B) {
		for range b.N {
			deepCopy(c)
		}
	})
	b.Run("decode", func(b *testing.B) {
		for range b.N {
			decode(data)
		}
	})
}
