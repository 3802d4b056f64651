/* jitscan memcpy: the same tile loads and stores with no scan in between. Its speed
 * is the ceiling for every single-pass variant, which moves the same 2n. */

JS_KERNEL void js_memcpy(JS_GLOBAL const js_in* in, js_size in_off, JS_GLOBAL js_val* out, js_size out_off, js_size n)
{
    js_size base = (js_size)JS_GROUP_ID * JS_TILE;
    js_val x[JS_P][JS_V];
    js_load_values(in + in_off, base, n, x);
    js_store_values(out + out_off, base, n, x);
}
