"""DEEPaaS models written as DEEPaaS users write them (webargs 5-era fields), for inferd's tests."""
