ê
E_DECODEbad