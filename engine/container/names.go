package container

import (
	"fmt"
	"math/rand/v2"
	"path"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
)

// NameChars is how Docker describes the characters a name may use.
const NameChars = `[a-zA-Z0-9][a-zA-Z0-9_.-]`

// ValidateName checks a container name as Docker does: one optional
// leading "/", then a letter or digit followed by at least one letter,
// digit, "_", "." or "-". So no path separators, no "..", no single
// character names. The error repeats the name as given, in Docker's words,
// classed errdefs.ErrInvalidArgument.
func ValidateName(name string) error {
	if !validName(strings.TrimPrefix(name, "/")) {
		return errdefs.ErrInvalidArgument.WithMessage(
			fmt.Sprintf("Invalid container name (%s), only %s are allowed", name, NameChars))
	}
	return nil
}

func validName(n string) bool {
	if len(n) < 2 || !isAlnum(n[0]) {
		return false
	}
	for i := 1; i < len(n); i++ {
		c := n[i]
		if !isAlnum(c) && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// canonicalName gives a valid name its stored form, with the leading "/".
func canonicalName(name string) string {
	if strings.HasPrefix(name, "/") {
		return name
	}
	return "/" + name
}

// The generator's words are hutch's own: weather and colours for the
// adjectives, small burrowing and hutch-dwelling animals for the nouns.
var (
	adjectives = [...]string{
		"amber", "ancient", "arctic", "autumn", "bashful", "billowing", "blazing",
		"breezy", "brisk", "bronze", "cedar", "chilly", "cobalt", "copper",
		"crimson", "dappled", "dawning", "dusky", "dusty", "early", "fading",
		"fluffy", "foggy", "gentle", "gilded", "golden", "hazy", "hidden",
		"hollow", "icy", "ivory", "lanky", "leafy", "lively", "misty", "mossy",
		"nimble", "noisy", "pale", "plucky", "polished", "quiet", "rapid",
		"restless", "rustic", "scarlet", "shady", "silent", "snowy", "spry",
		"sunny", "tawny", "twilight", "velvet", "wandering", "wild", "windy",
		"wispy", "woolly",
	}
	nouns = [...]string{
		"badger", "bandicoot", "beaver", "bobcat", "capybara", "cavy",
		"chinchilla", "chipmunk", "coati", "cottontail", "degu", "dormouse",
		"ermine", "ferret", "fox", "gerbil", "gopher", "hamster", "hare",
		"hedgehog", "jackrabbit", "jerboa", "lemming", "lynx", "marmot",
		"marten", "meerkat", "mink", "mole", "mongoose", "muskrat", "numbat",
		"ocelot", "opossum", "otter", "pika", "platypus", "porcupine", "quokka",
		"rabbit", "raccoon", "shrew", "skunk", "squirrel", "stoat", "tamarin",
		"tanuki", "vole", "wallaby", "weasel", "wombat", "woodchuck",
	}
)

// randomName returns an adjective_noun name; from the second attempt on a
// digit is added, so that a crowded name space still converges quickly.
func randomName(attempt int) string {
	n := adjectives[rand.IntN(len(adjectives))] + "_" + nouns[rand.IntN(len(nouns))]
	if attempt > 0 {
		n += strconv.Itoa(rand.IntN(10))
	}
	return "/" + n
}

// ParseLink reads a link (--link) name[:alias] as Docker's CLI does, and the
// /name:/parent/alias form Docker's inspect shows.
func ParseLink(v string) (name, alias string, err error) {
	parts := strings.Split(v, ":")
	switch {
	case v == "":
		return "", "", errdefs.ErrInvalidArgument.WithMessage("empty string specified for links")
	case len(parts) > 2:
		return "", "", errdefs.ErrInvalidArgument.WithMessage("bad format for links: " + v)
	case len(parts) == 1:
		name, alias = v, v
	default:
		name, alias = parts[0], parts[1]
	}
	name = strings.TrimPrefix(name, "/")
	_, alias = path.Split(alias)
	if name == "" || alias == "" || strings.Contains(name, "/") {
		return "", "", errdefs.ErrInvalidArgument.WithMessage("bad format for links: " + v)
	}
	return name, alias, nil
}
