# Turns a text file into the body of a C string literal, one source line
# a line, so that a file (the status page) is compiled into a binary and
# nothing has to be found on disk at run time.
#   awk -f contrib/embed.awk FILE >FILE.inc
#   static const char text[] =
#   #include "FILE.inc"
#   ;
# Escaped: backslash, double quote, tab, and '?' (C11 trigraphs).
{
	gsub(/\\/, "&&")
	gsub(/"/, "\\\"")
	gsub(/\t/, "\\t")
	gsub(/\?/, "\\?")
	printf "\"%s\\n\"\n", $0
}
