"""The wire: the only code that knows HTTP and keystoneauth1.

One transport (:mod:`.transport`) sends every request at the negotiated
microversion (:mod:`.negotiation`), classifies what failed on the way
(:mod:`.failures`) and turns every error answer into one typed exception
(:mod:`.responses`).
"""
