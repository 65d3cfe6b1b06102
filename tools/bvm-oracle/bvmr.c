/* bvmr CMDSET SRC [PARAM...]: compile SRC with BriskVM, run its Main() and print what it
 * outputs (tools/bvm-oracle/run.sh). */
#include <windows.h>
#include <stdio.h>
#include <stdlib.h>
#define F(ret, name, ...) typedef ret (__stdcall *t_##name)(__VA_ARGS__); static t_##name name;
F(int, BVM_CreateCommandSet, const char*)
F(int, BVM_CompileString, const char*, int, const char*, int)
F(const char*, BVM_GetLastErrorMsg, void)
F(int, BVM_CreateContext_, int, int, int)
F(int, BVM_SelectContext, int)
F(int, BVM_MapModule_, int, int)
F(int, BVM_FindEntryPoint, int, int, const char*)
F(int, BVM_SelectEntryPoint, int)
F(int, BVM_Run, void)
F(int, BVM_PopInt, void)
F(float, BVM_PopFloat, void)
F(const char*, BVM_PopString8, void)
F(void, BVM_PushInt, int)
F(void, BVM_PushFloat, float)
F(void, BVM_PushString8Z, const char*)
static char *slurp(const char *p) {
  FILE *f = fopen(p, "rb"); if (!f) { printf("cannot open %s\n", p); exit(2); }
  fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET);
  char *b = malloc(n + 1); fread(b, 1, n, f); b[n] = 0; fclose(f); return b;
}
static int nparams; static char **params;
static int run(void) {
  for (;;) {
    int r = BVM_Run();
    switch (r) {
    case 0: return 1;
    case 1: printf("RUNTIME ERROR: %s\n", BVM_GetLastErrorMsg()); return 0;
    case 503: printf("LOG [%s]\n", BVM_PopString8()); break;
    case 443: { int i = BVM_PopInt(); BVM_PushString8Z(i >= 1 && i <= nparams ? params[i - 1] : ""); break; }
    case 267: BVM_PushInt(7); break;
    case 442: { BVM_PopInt(); BVM_PopInt(); BVM_PopInt(); const char *t = BVM_PopString8(); BVM_PopInt(); printf("OUT [%s]\n", t); break; }
    case 401: BVM_PushInt(BVM_PopInt()); break; /* Int(i%) */
    case 378: { const char *a = BVM_PopString8(); BVM_PushFloat((float)atof(a)); break; } /* Float(s$) */
    case 417: { const char *a = BVM_PopString8(); BVM_PushInt((int)strlen(a)); break; }
    case 423: { int n = BVM_PopInt(), st = BVM_PopInt(); const char *a = BVM_PopString8(); static char b[4096];
      int len = strlen(a); if (st < 1) st = 1; b[0] = 0; if (st <= len) { if (n < 0 || st - 1 + n > len) n = len - st + 1; memcpy(b, a + st - 1, n); b[n] = 0; }
      BVM_PushString8Z(b); break; }
    default: printf("unhandled command %d\n", r); return 0;
    }
    fflush(stdout);
  }
}
#define L(name) name = (t_##name)GetProcAddress(h, #name); if (!name) { printf("no %s\n", #name); return 2; }
int main(int argc, char **argv) {
  HMODULE h = LoadLibraryA("briskvm.dll");
  if (!h) { printf("no dll\n"); return 2; }
  L(BVM_CreateCommandSet) L(BVM_CompileString) L(BVM_GetLastErrorMsg) L(BVM_CreateContext_)
  L(BVM_SelectContext) L(BVM_MapModule_) L(BVM_FindEntryPoint) L(BVM_SelectEntryPoint) L(BVM_Run)
  L(BVM_PopInt) L(BVM_PopFloat) L(BVM_PopString8) L(BVM_PushInt) L(BVM_PushFloat) L(BVM_PushString8Z)
  int set = BVM_CreateCommandSet(slurp(argv[1]));
  if (!set) { printf("command set failed: %s\n", BVM_GetLastErrorMsg()); return 2; }
  nparams = argc - 3; params = argv + 3;
  int m = BVM_CompileString(slurp(argv[2]), set, "probe", 0);
  if (!m) { printf("COMPILE ERROR: %s\n", BVM_GetLastErrorMsg()); return 1; }
  int ctx = BVM_CreateContext_(set, 0, 0);
  if (!ctx || !BVM_SelectContext(ctx)) { printf("context failed: %s\n", BVM_GetLastErrorMsg()); return 2; }
  if (!BVM_MapModule_(ctx, m)) { printf("map failed: %s\n", BVM_GetLastErrorMsg()); return 2; }
  int ep = BVM_FindEntryPoint(ctx, m, "_main");
  if (ep && BVM_SelectEntryPoint(ep)) { run(); BVM_PopInt(); }
  ep = BVM_FindEntryPoint(ctx, m, "Main");
  if (!ep || !BVM_SelectEntryPoint(ep)) { printf("no Main: %s\n", BVM_GetLastErrorMsg()); return 2; }
  if (!run()) return 1;
  return 0;
}
