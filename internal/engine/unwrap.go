package engine

// unwrap returns the engine client behind a *recipes.Client. Package
// recipes, which imports this one, sets it when it is initialised; it is
// how the recipe packages reach the engine without the public Client
// exporting it.
var unwrap func(client any) *Client

// SetUnwrap is called once, by package recipes.
func SetUnwrap(f func(client any) *Client) { unwrap = f }

// Of returns the engine client behind client (a *recipes.Client), or nil
// for a nil one. Its methods treat a nil *Client as ErrNilClient.
func Of(client any) *Client {
	if unwrap == nil || client == nil {
		return nil
	}
	return unwrap(client)
}
