/* bzcheck SRC DEST: decompress SRC into DEST with Realm Crafter's libbz2w.dll, as its client
 * does after a download (bz2(1, 0, "Temp.dat", "Temp2.dat")); prints the call's result. */
#include <windows.h>
#include <stdio.h>
typedef int (__stdcall *Bz2)(int, int, const char*, const char*);
int main(int argc, char **argv) {
  HMODULE h = LoadLibraryA("libbz2w.dll");
  if (!h) { printf("no dll\n"); return 2; }
  Bz2 f = (Bz2)GetProcAddress(h, "_bz2@16");
  if (!f) { printf("no _bz2@16\n"); return 2; }
  int r = f(1, 0, argv[1], argv[2]);
  printf("bz2(1, 0, %s, %s) = %d\n", argv[1], argv[2], r);
  return 0;
}
