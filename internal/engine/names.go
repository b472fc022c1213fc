package engine

// ParseProtected splits a name made by a protected create,
// ProtectedPrefix + <uuid> + "-" + rest, where uuid has the dashed
// 8-4-4-4-12 hexadecimal form, into its uuid and rest; ok is false for any
// other name. Tools that read the recipes' nodes (cmd/zkinspect) use it to
// recognise them as the engine does.
func ParseProtected(name string) (uuid, rest string, ok bool) {
	u, ok := protectedUUID(name)
	if !ok {
		return "", "", false
	}
	return u, name[len(ProtectedPrefix)+len(u)+1:], true
}
