/*
 * banned.h: functions that are too easy to misuse, refused at compile time
 * (after git's banned.h).  Every .c file includes it last, after the system headers it uses.
 */
#ifndef VIVARIUM_BANNED_H
#define VIVARIUM_BANNED_H

#define BANNED(f) sorry_##f##_is_banned

#undef strcpy
#define strcpy(x, y)		BANNED(strcpy)
#undef strcat
#define strcat(x, y)		BANNED(strcat)
#undef strncpy
#define strncpy(x, y, n)	BANNED(strncpy)
#undef strncat
#define strncat(x, y, n)	BANNED(strncat)
#undef strtok
#define strtok(x, y)		BANNED(strtok)
#undef sprintf
#define sprintf(...)		BANNED(sprintf)
#undef vsprintf
#define vsprintf(...)		BANNED(vsprintf)
#undef gets
#define gets(x)			BANNED(gets)

#endif
