/*
 * The upload page's script (common/fileweb.c embeds it at build time): a
 * progress bar, drop onto the page, and the answer shown in place.
 * Without it the form still works: a plain POST, and the answer is a page
 * of its own.  Names are shown with textContent, never as HTML.
 */
(function () {
	var f = document.getElementById('up');
	if (!f)
		return;
	var i = f.querySelector('input[type=file]'),
	    p = document.getElementById('pr'),
	    o = document.getElementById('out'),
	    d = document.getElementById('drop');

	function send() {
		if (!i.files.length)
			return;
		var x = new XMLHttpRequest();
		x.open('POST', f.getAttribute('action'));
		x.setRequestHeader('Accept', 'application/json');
		p.style.display = 'block';
		p.value = 0;
		x.upload.onprogress = function (e) {
			if (e.lengthComputable)
				p.value = e.loaded / e.total;
		};
		x.onload = function () {
			p.style.display = 'none';
			var r;
			try {
				r = JSON.parse(x.responseText);
			} catch (e) {
				r = { error: 'the server answered ' + x.status };
			}
			show(r);
		};
		x.onerror = function () {
			p.style.display = 'none';
			show({ error: 'the upload did not reach the server (connection lost)' });
		};
		/*
		 * The form's files go with this request; the field is emptied now,
		 * so the button pressed while they are on their way (the change
		 * event has sent them already) does not send them a second time.
		 */
		var b = new FormData(f);
		i.value = '';
		x.send(b);
	}

	function show(r) {
		var u = document.createElement('ul');
		(r.files || []).forEach(function (e) {
			var l = document.createElement('li');
			l.className = 'ok';
			l.textContent = e.name + ' \u2192 ' + e.path + ' (' + e.size + ' bytes)' +
			    (e.renamed ? ' (a file of that name existed, so this one got a new name)' : '');
			u.appendChild(l);
		});
		if (r.error) {
			var l = document.createElement('li');
			l.className = 'err';
			l.textContent = r.error;
			u.appendChild(l);
		}
		o.appendChild(u);
		i.value = '';
	}

	f.addEventListener('submit', function (e) { e.preventDefault(); send(); });
	d.addEventListener('dragover', function (e) { e.preventDefault(); d.className = 'drop over'; });
	d.addEventListener('dragleave', function () { d.className = 'drop'; });
	d.addEventListener('drop', function (e) {
		e.preventDefault();
		d.className = 'drop';
		i.files = e.dataTransfer.files;
		send();
	});
	i.addEventListener('change', function () { send(); });
})();
