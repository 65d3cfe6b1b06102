/* bvmc CMDSET SRC...: compile RSL files as Realm Crafter's server loads them
 * (Scripting.bb LoadScripts/CompileModules: lines trimmed, `!` lines blanked,
 * `Using "RC_Core.rcm"` prepended to all but RC_Core.rsl, `!COMPILE` files compiled and
 * saved as modules first, RC_Core before the others) with BriskVM and Realm Crafter's
 * command set; prints OK or ERR with BriskVM's message for each (tools/bvm-oracle/run.sh).
 * Error lines are BriskVM's: one more than the file's, for the prepended line. */
#include <windows.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
typedef int (__stdcall *CreateCS)(const char*);
typedef int (__stdcall *CompileStr)(const char*, int, const char*, int);
typedef const char* (__stdcall *LastMsg)(void);
typedef int (__stdcall *SetExt)(const char*, int);
typedef int (__stdcall *SetRepo)(const char*, int);
typedef int (__stdcall *SaveMod)(int);
static char *slurp(const char *p) {
  FILE *f = fopen(p, "rb"); if (!f) { printf("cannot open %s\n", p); exit(2); }
  fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET);
  char *b = malloc(n + 1); fread(b, 1, n, f); b[n] = 0; fclose(f); return b;
}
/* The script as LoadScripts builds it; *compile set when it has a !COMPILE line. */
static char *load(const char *path, const char *name, int *compile) {
  char *src = slurp(path); size_t n = strlen(src);
  char *out = malloc(n * 2 + 64); out[0] = 0; *compile = 0;
  if (_stricmp(name, "rc_core") != 0) strcat(out, "Using \"RC_Core.rcm\"\n");
  char *p = src;
  while (*p) {
    char *e = p; while (*e && *e != '\n') e++;
    char *a = p, *b = e; while (a < b && (*a == ' ' || *a == '\t' || *a == '\r')) a++;
    while (b > a && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '\r')) b--;
    if (a < b && *a == '!') {
      if (b - a == 8 && _strnicmp(a, "!COMPILE", 8) == 0) *compile = 1;
      strcat(out, " ");
    } else strncat(out, a, b - a);
    strcat(out, "\n");
    p = *e ? e + 1 : e;
  }
  return out;
}
static void base(const char *path, char *name, size_t cap) {
  const char *s = strrchr(path, '/'), *t = strrchr(path, '\\');
  if (t > s) s = t; s = s ? s + 1 : path;
  snprintf(name, cap, "%s", s); char *dot = strrchr(name, '.'); if (dot) *dot = 0;
}
int main(int argc, char **argv) {
  HMODULE h = LoadLibraryA("briskvm.dll");
  if (!h) { printf("no dll\n"); return 2; }
  CreateCS ccs = (CreateCS)GetProcAddress(h, "BVM_CreateCommandSet");
  CompileStr cs = (CompileStr)GetProcAddress(h, "BVM_CompileString");
  LastMsg lm = (LastMsg)GetProcAddress(h, "BVM_GetLastErrorMsg");
  SetExt se = (SetExt)GetProcAddress(h, "BVM_SetFileExt");
  SetRepo sr = (SetRepo)GetProcAddress(h, "BVM_SetRepository");
  SaveMod sm = (SaveMod)GetProcAddress(h, "BVM_SaveModule");
  se(".rsl", 1); se(".rcm", 2); se(".rcs", 4); sr(".", 7);
  int set = ccs(slurp(argv[1]));
  if (!set) { printf("command set failed: %s\n", lm()); return 2; }
  int n = argc - 2; char **files = argv + 2;
  int *ok = calloc(n, sizeof(int));
  /* Pass 1: modules (RC_Core first), saved where `Using` finds them. */
  for (int round = 0; round < 2; round++)
    for (int i = 0; i < n; i++) {
      char name[512]; int compile; base(files[i], name, sizeof name);
      if ((_stricmp(name, "rc_core") == 0) != (round == 0)) continue;
      char *code = load(files[i], name, &compile);
      if (!compile) continue;
      int m = cs(code, set, name, 0);
      if (m) { sm(m); ok[i] = 1; printf("OK   %s (module)\n", files[i]); }
      else { ok[i] = -1; printf("ERR  %s: %s\n", files[i], lm()); }
      fflush(stdout);
    }
  for (int i = 0; i < n; i++) {
    if (ok[i]) continue;
    char name[512]; int compile; base(files[i], name, sizeof name);
    int m = cs(load(files[i], name, &compile), set, name, 0);
    if (m) printf("OK   %s\n", files[i]); else printf("ERR  %s: %s\n", files[i], lm());
    fflush(stdout);
  }
  return 0;
}
