package container

import (
	"reflect"
	"sync"
)

// deepCopy returns a copy of c that shares no memory a caller could
// change: pointers, slices and maps are copied all the way down. The store
// hands out copies of its records on every Get and Update; decoding the
// stored JSON again did the same at four to five times the cost (9% of the
// engine's CPU in make bench's concurrent starts).
//
// Unexported fields are copied as they are, which is right for the
// immutable values records hold (time.Time, netip.Addr); the records
// themselves come from JSON, so they hold nothing else unexported that a
// copy could share.
func deepCopy(c *Container) *Container {
	if c == nil {
		return nil
	}
	out := new(Container)
	copyValue(reflect.ValueOf(out).Elem(), reflect.ValueOf(c).Elem())
	return out
}

// copyValue sets dst, which is settable, to a deep copy of src.
func copyValue(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		p := reflect.New(src.Type().Elem())
		copyValue(p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Interface:
		if src.IsNil() {
			return
		}
		v := reflect.New(src.Elem().Type()).Elem()
		copyValue(v, src.Elem())
		dst.Set(v)
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		if flat(src.Type().Elem()) {
			reflect.Copy(s, src)
		} else {
			for i := range src.Len() {
				copyValue(s.Index(i), src.Index(i))
			}
		}
		dst.Set(s)
	case reflect.Map:
		if src.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		elem := src.Type().Elem()
		for it := src.MapRange(); it.Next(); {
			v := reflect.New(elem).Elem()
			copyValue(v, it.Value())
			m.SetMapIndex(it.Key(), v)
		}
		dst.Set(m)
	case reflect.Struct:
		dst.Set(src) // unexported fields included, as they are
		for _, i := range deepFields(src.Type()) {
			copyValue(dst.Field(i), src.Field(i))
		}
	case reflect.Array:
		if flat(src.Type()) {
			dst.Set(src)
			return
		}
		for i := range src.Len() {
			copyValue(dst.Index(i), src.Index(i))
		}
	default:
		dst.Set(src)
	}
}

// flatTypes caches flat's answers, structFields deepFields'.
var flatTypes, structFields sync.Map // reflect.Type → bool, []int

// deepFields lists the exported fields of struct type t that are not flat.
func deepFields(t reflect.Type) []int {
	if v, ok := structFields.Load(t); ok {
		return v.([]int)
	}
	var idx []int
	for i := range t.NumField() {
		if f := t.Field(i); f.IsExported() && !flat(f.Type) {
			idx = append(idx, i)
		}
	}
	structFields.Store(t, idx)
	return idx
}

// flat reports whether values of t hold no reference a copy would share:
// a plain assignment copies them.
func flat(t reflect.Type) bool {
	if v, ok := flatTypes.Load(t); ok {
		return v.(bool)
	}
	f := isFlat(t)
	flatTypes.Store(t, f)
	return f
}

func isFlat(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Slice, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return false
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && !flat(f.Type) {
				return false
			}
		}
		return true
	case reflect.Array:
		return flat(t.Elem())
	}
	return true
}
